/* A WebSocket load client for the benchmark: CONNS connections to HOST:PORT PATH, each
 * keeping WINDOW messages of SIZE bytes in flight against an echo server (a new one is sent
 * as each echo arrives whole), for SECONDS. Prints messages and payload bytes received per
 * second. Frames are masked (as a client's must be, RFC 6455 §5.3) with a zero key: the
 * key's randomness protects browsers' peers, not a benchmark, and a zero key keeps the
 * client's own cost flat. Bounded: it stops at SECONDS, on 127.0.0.1 only.
 *
 * usage: ws_load PORT PATH CONNS SIZE WINDOW SECONDS     build: cc -O2 -o ws_load ws_load.c */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd, open, inflight;
    unsigned char head[2048]; size_t head_len;
    /* receive: header bytes and the payload left of the current frame */
    unsigned char fh[14]; size_t fh_len, fh_need; uint64_t left;
    size_t out_off, out_len;
} conn;

static unsigned char *frame; static size_t frame_len;
static uint64_t msgs, bytes;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

/* Sends whole frames until the window is full or the socket pushes back. */
static int pump(conn *c, int window) {
    for (;;) {
        if (c->out_len == 0) {
            if (c->inflight >= window) return 0;
            c->out_off = 0; c->out_len = frame_len; c->inflight++;
        }
        ssize_t n = write(c->fd, frame + c->out_off, c->out_len - c->out_off);
        if (n < 0) return errno == EAGAIN ? 0 : -1;
        c->out_off += (size_t)n;
        if (c->out_off == c->out_len) c->out_len = 0;
    }
}

/* Counts whole echoed messages in `p`. */
static void consume(conn *c, unsigned char *p, size_t n) {
    while (n > 0) {
        if (c->left > 0) {
            size_t take = n < c->left ? n : (size_t)c->left;
            c->left -= take; bytes += take; p += take; n -= take;
            if (c->left == 0) { msgs++; c->inflight--; }
            continue;
        }
        c->fh[c->fh_len++] = *p++; n--;
        if (c->fh_len == 2) {
            uint64_t l = c->fh[1] & 0x7F;
            c->fh_need = l == 126 ? 4 : l == 127 ? 10 : 2;
        }
        if (c->fh_len >= 2 && c->fh_len == c->fh_need) {
            uint64_t l = c->fh[1] & 0x7F;
            if (l == 126) l = ((uint64_t)c->fh[2] << 8) | c->fh[3];
            else if (l == 127) { l = 0; for (int i = 0; i < 8; i++) l = (l << 8) | c->fh[2 + i]; }
            c->fh_len = 0;
            c->left = l;
            if (l == 0) { msgs++; c->inflight--; }
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 7) { fprintf(stderr, "usage: ws_load PORT PATH CONNS SIZE WINDOW SECONDS\n"); return 2; }
    int port = atoi(argv[1]), conns = atoi(argv[3]), window = atoi(argv[5]);
    const char *path = argv[2];
    size_t size = (size_t)atol(argv[4]);
    double seconds = atof(argv[6]);
    /* one binary frame, masked with a zero key */
    frame = malloc(size + 14);
    size_t h = 0;
    frame[h++] = 0x82;
    if (size < 126) frame[h++] = 0x80 | (unsigned char)size;
    else if (size <= 0xFFFF) { frame[h++] = 0x80 | 126; frame[h++] = (unsigned char)(size >> 8); frame[h++] = (unsigned char)size; }
    else { frame[h++] = 0x80 | 127; for (int i = 0; i < 8; i++) frame[h++] = (unsigned char)((uint64_t)size >> (56 - 8 * i)); }
    memset(frame + h, 0, 4); h += 4;
    memset(frame + h, 'x', size);
    frame_len = h + size;

    int ep = epoll_create1(0);
    conn *cs = calloc((size_t)conns, sizeof *cs);
    char req[512];
    int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path);
    for (int i = 0; i < conns; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); return 1; }
        if (write(fd, req, (size_t)reqlen) != reqlen) { perror("write"); return 1; }
        /* blocking read of the 101 head: a handshake refused is a failed run */
        size_t got = 0;
        while (!memmem(cs[i].head, got, "\r\n\r\n", 4)) {
            ssize_t n = read(fd, cs[i].head + got, sizeof cs[i].head - got);
            if (n <= 0) { fprintf(stderr, "handshake: connection closed\n"); return 1; }
            got += (size_t)n;
        }
        if (memcmp(cs[i].head, "HTTP/1.1 101", 12) != 0) { fprintf(stderr, "handshake refused: %.40s\n", cs[i].head); return 1; }
        unsigned char *end = memmem(cs[i].head, got, "\r\n\r\n", 4) + 4;
        cs[i].fd = fd;
        consume(&cs[i], end, got - (size_t)(end - cs[i].head));
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    }
    msgs = bytes = 0;
    double start = now(), stop = start + seconds;
    static unsigned char buf[1 << 18];
    struct epoll_event evs[256];
    while (now() < stop) {
        int n = epoll_wait(ep, evs, 256, 100);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (evs[i].events & EPOLLIN) {
                for (;;) {
                    ssize_t r = read(c->fd, buf, sizeof buf);
                    if (r > 0) { consume(c, buf, (size_t)r); continue; }
                    if (r == 0 || errno != EAGAIN) { fprintf(stderr, "connection lost\n"); return 1; }
                    break;
                }
            }
            if (pump(c, window) < 0) { fprintf(stderr, "write failed\n"); return 1; }
        }
    }
    double elapsed = now() - start;
    printf("{\"msgs_per_s\": %.1f, \"bytes_per_s\": %.1f, \"msgs\": %llu, \"seconds\": %.3f}\n",
           msgs / elapsed, bytes / elapsed, (unsigned long long)msgs, elapsed);
    return 0;
}
