/* A WebSocket echo server for the benchmark (RFC 6455): epoll, non-blocking, one process
 * per worker on one SO_REUSEPORT port. It answers the opening handshake (Sec-WebSocket-Accept
 * with OpenSSL's SHA-1), then sends every data frame back unmasked, as a server must. It is
 * the upstream behind both proxies, so its cost is the same for both. Not for production:
 * no fragmentation handling beyond echoing frames one by one, no extensions.
 *
 * usage: ws_echo PORT [PROCESSES]        build: cc -O2 -o ws_echo ws_echo.c -lcrypto */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    int fd;
    int open;          /* handshake done */
    unsigned char *in; size_t in_len, in_cap;
    unsigned char *out; size_t out_len, out_cap, out_off;
} conn;

static void grow(unsigned char **b, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    *b = realloc(*b, c);
    if (!*b) { perror("realloc"); exit(1); }
    *cap = c;
}

static void queue(conn *c, const void *p, size_t n) {
    grow(&c->out, &c->out_cap, c->out_len + n);
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

/* Writes what is queued; 0 when all out, 1 when the socket is full, -1 on error. */
static int flush_out(conn *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0) return errno == EAGAIN ? 1 : -1;
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    return 0;
}

static int handshake(conn *c) {
    unsigned char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t head = (size_t)(end - c->in) + 4;
    char *key = NULL;
    char *line = (char *)c->in;
    c->in[head - 1] = 0;
    for (char *p = line; p && *p; ) {
        char *nl = strstr(p, "\r\n");
        if (nl) *nl = 0;
        if (strncasecmp(p, "Sec-WebSocket-Key:", 18) == 0) { key = p + 18; while (*key == ' ') key++; }
        p = nl ? nl + 2 : NULL;
    }
    if (!key) return -1;
    char buf[128];
    snprintf(buf, sizeof buf, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((unsigned char *)buf, strlen(buf), digest);
    char accept[64];
    EVP_EncodeBlock((unsigned char *)accept, digest, SHA_DIGEST_LENGTH);
    char resp[256];
    int n = snprintf(resp, sizeof resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
    queue(c, resp, (size_t)n);
    memmove(c->in, c->in + head, c->in_len - head);
    c->in_len -= head;
    c->open = 1;
    return 1;
}

/* Echoes every whole frame in the input; -1 on a Close or a broken frame. */
static int echo_frames(conn *c) {
    size_t off = 0;
    for (;;) {
        size_t avail = c->in_len - off;
        unsigned char *p = c->in + off;
        if (avail < 2) break;
        int opcode = p[0] & 0x0F, masked = p[1] & 0x80;
        uint64_t len = p[1] & 0x7F;
        size_t h = 2;
        if (len == 126) { if (avail < 4) break; len = ((uint64_t)p[2] << 8) | p[3]; h = 4; }
        else if (len == 127) { if (avail < 10) break; len = 0; for (int i = 0; i < 8; i++) len = (len << 8) | p[2 + i]; h = 10; }
        if (masked) h += 4;
        if (avail < h + len) break;
        if (opcode == 0x8) return -1;
        unsigned char *payload = p + h;
        if (masked) {
            unsigned char *mask = p + h - 4;
            uint32_t m; memcpy(&m, mask, 4);
            size_t i = 0;
            if (m != 0) {
                for (; i + 4 <= len; i += 4) { uint32_t w; memcpy(&w, payload + i, 4); w ^= m; memcpy(payload + i, &w, 4); }
                for (; i < len; i++) payload[i] ^= mask[i & 3];
            }
        }
        unsigned char hdr[10];
        size_t hl = 2;
        hdr[0] = p[0] == 0x89 ? 0x8A : p[0];  /* a ping gets its pong */
        if (len < 126) hdr[1] = (unsigned char)len;
        else if (len <= 0xFFFF) { hdr[1] = 126; hdr[2] = (unsigned char)(len >> 8); hdr[3] = (unsigned char)len; hl = 4; }
        else { hdr[1] = 127; for (int i = 0; i < 8; i++) hdr[2 + i] = (unsigned char)(len >> (56 - 8 * i)); hl = 10; }
        queue(c, hdr, hl);
        queue(c, payload, (size_t)len);
        off += h + (size_t)len;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return 0;
}

static void serve(int lfd) {
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                }
                continue;
            }
            int dead = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    grow(&c->in, &c->in_cap, c->in_len + 65536);
                    ssize_t r = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
                    if (r > 0) { c->in_len += (size_t)r; continue; }
                    if (r == 0 || errno != EAGAIN) dead = 1;
                    break;
                }
                if (!c->open && handshake(c) < 0) dead = 1;
                if (c->open && echo_frames(c) < 0) dead = 1;
            }
            if (!dead && flush_out(c) < 0) dead = 1;
            if (dead) {
                close(c->fd);
                free(c->in); free(c->out); free(c);
            }
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: ws_echo PORT [PROCESSES]\n"); return 2; }
    int port = atoi(argv[1]), procs = argc > 2 ? atoi(argv[2]) : 1;
    signal(SIGPIPE, SIG_IGN);
    for (int p = 0; p < procs; p++) {
        if (p < procs - 1) {
            if (fork() != 0) continue;
            /* A child goes when the process the harness started goes. */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
        }
        int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
        setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 1024) < 0) { perror("bind/listen"); return 1; }
        serve(lfd);
    }
    return 0;
}
