// libevent keeps headers in a TAILQ (sys/queue.h macros), which Swift cannot walk;
// these functions walk it. Everything else in libevent is called directly.
#ifndef TG_EVENT_H
#define TG_EVENT_H
#include <sys/types.h>
#include <sys/select.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

/// First header of a list, or NULL.
struct evkeyval *tg_headers_first(struct evkeyvalq *headers);
/// Next header after `kv`, or NULL.
struct evkeyval *tg_headers_next(struct evkeyval *kv);
/// Creates a listening socket with SO_REUSEADDR and SO_REUSEPORT, non-blocking, bound and
/// listening; one per worker so the kernel spreads connections across workers.
/// Returns the fd or -1 with errno set.
int tg_reuseport_listener(const char *host, unsigned short port, int backlog);
/// Whether the socket `fd` has completed its TCP connect (getpeername succeeds).
int tg_socket_connected(int fd);
/// The request line's HTTP version (struct evhttp_request is opaque to Swift).
void tg_request_version(struct evhttp_request *req, int *major, int *minor);
#endif
