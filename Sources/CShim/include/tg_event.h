// Socket set-up that takes several C calls and errno handling (listening with SO_REUSEPORT,
// the connect check), kept together in C. libevent itself is called directly from Swift.
#ifndef TG_EVENT_H
#define TG_EVENT_H
#include <sys/types.h>
#include <sys/select.h>

/// Creates a listening socket with SO_REUSEADDR and SO_REUSEPORT, non-blocking, bound and
/// listening; one per worker so the kernel spreads connections across workers.
/// Returns the fd or -1 with errno set.
int tg_reuseport_listener(const char *host, unsigned short port, int backlog);
/// Binds a socket to host:port without SO_REUSEPORT (with SO_REUSEADDR, so a connection in
/// TIME_WAIT does not count) and closes it: 0 when the address is free, -1 with errno set
/// (EADDRINUSE: a socket listens there, whatever its options).
int tg_listen_address_free(const char *host, unsigned short port);
/// Whether the socket `fd` has completed its TCP connect (getpeername succeeds).
int tg_socket_connected(int fd);
#endif
