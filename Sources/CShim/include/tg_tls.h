// TLS for the public listener and for Redis connections. Kept in C so that the Reactor
// module need not import both libevent's and OpenSSL's headers into one Swift file (their
// system-header definitions clash as two Clang modules), and because the calls a client
// needs include macros Swift cannot see (SSL_set_tlsext_host_name is an SSL_ctrl macro).
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

/// A TLS 1.2+ client context that verifies the server's certificate chain against the CA
/// certificates in `ca_file` (PEM), or the system's when `ca_file` is NULL. With
/// `insecure_skip_verify` non-zero it verifies nothing at all. NULL with a message in `err`.
void *tg_tls_client_ctx_new(const char *ca_file, int insecure_skip_verify, char *err, size_t errlen);
/// A bufferevent that runs a TLS client handshake once bufferevent_socket_connect has given
/// it a socket; BEV_EVENT_CONNECTED means the handshake is done. `server_name` is sent as SNI
/// unless it is an IP literal (RFC 6066 §3 forbids those), and unless `check_name` is zero
/// the certificate must match it (a DNS name, or an IP address in subjectAltName). Owns the
/// SSL object (freed with the bufferevent). NULL with a message in `err`.
struct bufferevent *tg_tls_connecting_bufferevent(struct event_base *base, void *ctx, const char *server_name,
                                                  int check_name, char *err, size_t errlen);
/// Why a TLS bufferevent reported an error: the certificate verification result when it
/// failed, then the OpenSSL errors libevent kept. Empty when there is nothing to say (a
/// plain socket error: errno tells).
void tg_tls_describe_failure(struct bufferevent *bev, char *buf, size_t buflen);
#endif
