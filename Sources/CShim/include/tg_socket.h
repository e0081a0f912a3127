// accept4 is a GNU extension: glibc declares it only under _GNU_SOURCE, which Swift's Glibc
// module is not built with, so Swift cannot see it. One wrapper, nothing else.
#ifndef TG_SOCKET_H
#define TG_SOCKET_H
#include <sys/socket.h>

/// accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC): the accepted socket is
/// non-blocking and close-on-exec without two more fcntl calls. -1 with errno on failure.
int tg_accept_nonblocking(int fd, struct sockaddr *addr, socklen_t *len);

/// A read-write file in `dir` that has no name (O_TMPFILE; where the file system lacks it,
/// a file unlinked as soon as it is made), close-on-exec. -1 with errno on failure.
int tg_open_unnamed_file(const char *dir);
#endif
