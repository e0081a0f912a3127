#include "tg_event.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>

/* host:port as a numeric passive address (no name lookup); NULL with errno EINVAL when it
 * is not one. The caller frees it with freeaddrinfo. */
static struct addrinfo *passive_address(const char *host, unsigned short port) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || res == NULL) { errno = EINVAL; return NULL; }
    return res;
}

int tg_reuseport_listener(const char *host, unsigned short port, int backlog) {
    struct addrinfo *res = passive_address(host, port);
    if (res == NULL) return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { freeaddrinfo(res); return -1; }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
        listen(fd, backlog) < 0) {
        int saved = errno;
        close(fd);
        freeaddrinfo(res);
        errno = saved;
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

int tg_listen_address_free(const char *host, unsigned short port) {
    struct addrinfo *res = passive_address(host, port);
    if (res == NULL) return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { freeaddrinfo(res); return -1; }
    int one = 1;
    int result = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
        result = -1;
    }
    int saved = errno;
    close(fd);
    freeaddrinfo(res);
    errno = saved;
    return result;
}

int tg_socket_connected(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    return getpeername(fd, (struct sockaddr *)&ss, &len) == 0;
}
