// The server side of TLS on the public listeners: a context built from a TLS profile, and
// the certificates it serves, held as one set that can be replaced while the listener runs
// (rotation) and chosen per handshake by SNI and by the key types the client supports.
#ifndef TG_TLS_SERVER_H
#define TG_TLS_SERVER_H
#include <stddef.h>

/// Mozilla's profiles (https://wiki.mozilla.org/Security/Server_Side_TLS), or lists given.
enum {
    /// TLS 1.2 and 1.3; ECDHE with AES-GCM or ChaCha20-Poly1305; X25519, P-256, P-384.
    TG_TLS_PROFILE_INTERMEDIATE = 0,
    /// TLS 1.3 only.
    TG_TLS_PROFILE_MODERN = 1,
    /// TLS 1.2 and 1.3 with the `ciphers`, `ciphersuites` and `curves` given (NULL: the
    /// intermediate profile's list).
    TG_TLS_PROFILE_CUSTOM = 2,
};

/// A certificate set: one or more certificate chains with their private keys, in the
/// config's order. Immutable once handed to a server; freed by its owner (or the server).
typedef struct tg_tls_certs tg_tls_certs;
tg_tls_certs *tg_tls_certs_new(void);
void tg_tls_certs_free(tg_tls_certs *certs);
/// Loads a PEM chain and its key and appends them. Refuses (0, with a message in `err`) a
/// file that cannot be read, a key that does not match, or a certificate not valid now.
/// On success `*not_after` is the leaf's notAfter in seconds since the epoch.
int tg_tls_certs_add(tg_tls_certs *certs, const char *cert_file, const char *key_file, double *not_after, char *err,
                     size_t errlen);
/// The SHA-256 of the leaf certificate at `index` (DER), for logs.
void tg_tls_certs_fingerprint(const tg_tls_certs *certs, int index, unsigned char out[32]);

/// A server context and the certificate set it serves. Owned by one Swift object.
typedef struct tg_tls_server tg_tls_server;
/// A context for `profile`, or NULL with a message in `err` (a custom list that leaves no
/// suite or no group). Offers `h2` in ALPN when `h2`.
tg_tls_server *tg_tls_server_new(int profile, const char *ciphers, const char *ciphersuites, const char *curves,
                                 int h2, char *err, size_t errlen);
void tg_tls_server_free(tg_tls_server *server);
/// The SSL_CTX connections are made from (`tg_tls_conn_new`).
void *tg_tls_server_ctx(tg_tls_server *server);
/// Serves `certs` from the next handshake on (open connections keep theirs) and frees the
/// set it replaces. Takes ownership of `certs`. Safe while other threads handshake.
void tg_tls_server_set_certs(tg_tls_server *server, tg_tls_certs *certs);
/// Whether every certificate of `certs` can be served from this context (OpenSSL's security
/// level judges the key size and the chain's digests only when a connection takes them): -1
/// if so, else the index of the first that cannot (-2: no connection could be made), with a
/// message in `err`.
int tg_tls_server_check_certs(tg_tls_server *server, const tg_tls_certs *certs, char *err, size_t errlen);
/// Asks every client for a certificate (RFC 8705 §3: mutual TLS), verified against the CAs
/// given to `tg_tls_server_set_client_cas`; a certificate that does not verify ends the
/// handshake. With `required`, so does a client that sends none. Call once, before serving.
void tg_tls_server_verify_clients(tg_tls_server *server, int required);
/// Loads the CA certificates client certificates must chain to (PEM, `ca_file`) and, when
/// `crl_file` is given, the CRLs that revoke leaves; used from the next handshake on (open
/// connections keep theirs). 0 with a message in `err` if a file cannot be read or holds no
/// certificate, and nothing changes. Safe while other threads handshake.
int tg_tls_server_set_client_cas(tg_tls_server *server, const char *ca_file, const char *crl_file, char *err,
                                 size_t errlen);
/// Whether `profile` with these lists builds a context (check-config's test), as above.
int tg_tls_profile_check(int profile, const char *ciphers, const char *ciphersuites, const char *curves, char *err,
                         size_t errlen);
#endif
