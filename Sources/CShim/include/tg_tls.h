// TLS for the public listener. Kept in C so that the Reactor module need not import both
// libevent's and OpenSSL's headers into one Swift file (their system-header definitions
// clash as two Clang modules).
#ifndef TG_TLS_H
#define TG_TLS_H
#include <stddef.h>
struct event_base;
struct bufferevent;

/// A TLS 1.2+ server context from PEM files, or NULL with a message in `err`.
void *tg_tls_server_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen);
void tg_tls_ctx_free(void *ctx);
/// A bufferevent that accepts TLS on a socket evhttp will set; owns the SSL object.
struct bufferevent *tg_tls_accepting_bufferevent(struct event_base *base, void *ctx);
#endif
