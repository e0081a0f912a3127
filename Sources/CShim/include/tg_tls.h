// TLS for the public listeners and for Redis connections. Kept in C so that the Reactor
// module need not import both libevent's and OpenSSL's headers into one Swift file (their
// system-header definitions clash as two Clang modules), and because the calls a client
// needs include macros Swift cannot see (SSL_set_tlsext_host_name is an SSL_ctrl macro).
#ifndef TG_TLS_H
#define TG_TLS_H
#include <stddef.h>
struct event_base;
struct bufferevent;

void tg_tls_ctx_free(void *ctx);
/// Writes `what`, then OpenSSL's error queue (emptied), into `err`.
void tg_tls_error_text(const char *what, char *err, size_t errlen);
/// Offers `h2` (if `h2`) and `http/1.1` in ALPN (RFC 7301), in the server's order of
/// preference; a client that offers neither gets no ALPN answer and is served HTTP/1.1.
void tg_tls_server_ctx_set_alpn(void *ctx, int h2);

/// One server-side TLS connection on a connected non-blocking socket (the HTTP/1.1
/// engine's TLS listeners): an SSL object in accept state reading and writing the fd
/// directly. The handshake runs inside the first reads. Owned by one Swift object, which
/// frees it with `tg_tls_conn_free`; the fd stays the caller's (never closed here).
typedef struct tg_tls_conn tg_tls_conn;

/// Why a read or write returned no bytes.
enum {
    /// More bytes from the socket are needed (wait for readable).
    TG_TLS_WANT_READ = 1,
    /// The socket must take bytes first (wait for writable), even for a read.
    TG_TLS_WANT_WRITE = 2,
    /// The peer ended the stream: a close_notify, or a TCP end without one.
    TG_TLS_CLOSED = 3,
    /// A protocol or socket error; `tg_tls_conn_error` says which. The session is over.
    TG_TLS_FAILED = 4,
};

/// A connection from the server context `ctx` on `fd`, or NULL with a message in `err`.
tg_tls_conn *tg_tls_conn_new(void *ctx, int fd, char *err, size_t errlen);
/// Frees the SSL object (no close_notify: see `tg_tls_conn_shutdown`). NULL is ignored.
void tg_tls_conn_free(tg_tls_conn *conn);
/// The handshake chose `h2` in ALPN.
int tg_tls_conn_alpn_is_h2(const tg_tls_conn *conn);
// Client contexts: offer only h2 in ALPN (an HTTP/2 upstream over TLS).
void tg_tls_client_ctx_offer_h2(void *ctx);
/// SSL_read: the number of plaintext bytes (> 0), or 0 with `*status` set (TG_TLS_*).
int tg_tls_conn_read(tg_tls_conn *conn, void *buf, int len, int *status);
/// SSL_write of up to `len` bytes (at most one record is worth asking for): the number
/// written (> 0), or 0 with `*status` set. After WANT_* the same bytes must be offered
/// again, from any address (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
int tg_tls_conn_write(tg_tls_conn *conn, const void *buf, int len, int *status);
/// The client certificate of a finished server-side handshake, if the client sent one and it
/// verified (RFC 8705 §3): 1, with the SHA-256 of its DER in `sha256`, its subject as an RFC
/// 4514 string (non-ASCII and control bytes escaped) in `subject`, and its subjectAltName
/// URIs, one per line, in `uris` (up to the first that holds a control byte or does not fit);
/// else 0.
int tg_tls_conn_client_certificate(const tg_tls_conn *conn, unsigned char sha256[32], char *subject,
                                   size_t subjectlen, char *uris, size_t urislen);
/// Whether decrypted or read-ahead bytes wait inside OpenSSL, which the socket's readiness
/// will not announce.
int tg_tls_conn_pending(const tg_tls_conn *conn);
/// Read-ahead is on and every byte it read from the socket has been returned: the last
/// read() took all the socket had room for, so the reader can wait for readiness.
int tg_tls_conn_drained(const tg_tls_conn *conn);
/// Sends a close_notify once, if the handshake finished and nothing failed; never waits
/// for the peer's. 1 when sent (or already), 0 when it could not be.
int tg_tls_conn_shutdown(tg_tls_conn *conn);
/// The last failure's OpenSSL error queue (or errno), as text; empty if none.
const char *tg_tls_conn_error(const tg_tls_conn *conn);

/// Where a pool keeps the newest TLS session its connections were given, to resume it on
/// its next connection (RFC 8446 §2.2, RFC 5077). Owned by one Swift object.
typedef struct tg_tls_session_slot tg_tls_session_slot;
tg_tls_session_slot *tg_tls_session_slot_new(void);
void tg_tls_session_slot_free(tg_tls_session_slot *slot);
/// Whether the slot holds a session.
int tg_tls_session_slot_filled(const tg_tls_session_slot *slot);

/// A TLS 1.2+ client context for HTTPS upstreams: verifies the server's chain against
/// `ca_file` (or the system's CAs when NULL) unless `insecure_skip_verify`, presents
/// `cert_file`/`key_file` when given (mTLS; both or neither), and hands new sessions to the
/// connection's slot (`tg_tls_client_conn_new`). NULL with a message in `err`.
void *tg_tls_upstream_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                              int insecure_skip_verify, char *err, size_t errlen);
/// A client connection on a connected non-blocking socket, in connect state: `server_name`
/// goes out as SNI unless it is an IP literal (RFC 6066 §3), and unless `check_name` is 0
/// the certificate must match it (DNS name, or IP address in subjectAltName). The slot's
/// session, if any, is offered for resumption, and new ones replace it; the slot must
/// outlive the connection. Freed with `tg_tls_conn_free`. NULL with a message in `err`.
tg_tls_conn *tg_tls_client_conn_new(void *ctx, int fd, const char *server_name, int check_name,
                                    tg_tls_session_slot *slot, char *err, size_t errlen);
/// One step of the handshake: 1 when it is done, else 0 with `*status` WANT_READ,
/// WANT_WRITE or FAILED (then `tg_tls_conn_error` holds the verify error or OpenSSL's).
int tg_tls_conn_handshake(tg_tls_conn *conn, int *status);
/// Whether the finished handshake resumed a session.
int tg_tls_conn_session_reused(const tg_tls_conn *conn);

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
