#include "tg_tls.h"
#include "tg_openssl.h"
#include <openssl/err.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/x509v3.h>

void tg_tls_error_text(const char *what, char *err, size_t errlen) {
    unsigned long code;
    size_t used = (size_t)snprintf(err, errlen, "%s", what);
    while ((code = ERR_get_error()) != 0 && used + 2 < errlen) {
        char buf[256];
        ERR_error_string_n(code, buf, sizeof buf);
        used += (size_t)snprintf(err + used, errlen - used, "; %s", buf);
    }
}

void tg_tls_ctx_free(void *ctx) { SSL_CTX_free((SSL_CTX *)ctx); }

struct tg_tls_conn {
    SSL *ssl;
    /// A fatal error happened: OpenSSL forbids SSL_shutdown after one.
    int failed;
    int shut;
    /// Client connections: where the server's session tickets go (owned elsewhere).
    tg_tls_session_slot *slot;
    char error[512];
};

struct tg_tls_session_slot {
    SSL_SESSION *session;
};

tg_tls_conn *tg_tls_conn_new(void *ctx, int fd, char *err, size_t errlen) {
    tg_tls_conn *conn = calloc(1, sizeof *conn);
    if (!conn) { snprintf(err, errlen, "out of memory"); return NULL; }
    ERR_clear_error();
    conn->ssl = SSL_new((SSL_CTX *)ctx);
    if (!conn->ssl) { tg_tls_error_text("SSL_new", err, errlen); free(conn); return NULL; }
    if (SSL_set_fd(conn->ssl, fd) != 1) {
        tg_tls_error_text("SSL_set_fd", err, errlen);
        SSL_free(conn->ssl);
        free(conn);
        return NULL;
    }
    // Writes are offered from an evbuffer that may move its bytes between retries; idle
    // keep-alive connections give their 16 KB+ read and write buffers back.
    SSL_set_mode(conn->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
    SSL_set_accept_state(conn->ssl);
    return conn;
}

static int is_ip_literal(const char *name);
static void describe_handshake_failure(tg_tls_conn *conn, const char *what);

/// The client context's new-session callback: the connection's slot keeps the newest
/// session (TLS 1.3 tickets arrive after the handshake, inside SSL_read), replacing the last.
///
/// The slot keeps a copy, never the connection's own object: OpenSSL 3 treats a TCP end
/// without close_notify (what most HTTP servers do when they close) as a fatal error and
/// marks the connection's session not resumable, which would spoil every later resumption
/// through a shared object. The ticket itself stays good (RFC 8446 §4.6.1: its PSK is
/// independent of how the connection that carried it ended).
static int keep_new_session(SSL *ssl, SSL_SESSION *session) {
    tg_tls_conn *conn = SSL_get_app_data(ssl);
    if (!conn || !conn->slot) return 0;
    SSL_SESSION *copy = SSL_SESSION_dup(session);
    if (!copy) return 0;
    if (conn->slot->session) SSL_SESSION_free(conn->slot->session);
    conn->slot->session = copy;
    return 0;  // OpenSSL keeps its reference to `session`
}

void *tg_tls_upstream_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                              int insecure_skip_verify, char *err, size_t errlen) {
    // The verification set-up is the one every client context has (tg_tls_client_ctx_new);
    // an upstream adds a pool-kept session and, for mTLS, its own certificate.
    SSL_CTX *ctx = tg_tls_client_ctx_new(ca_file, insecure_skip_verify, err, errlen);
    if (!ctx) return NULL;
    // Sessions are kept by each pool's slot, not in the context's internal cache.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, keep_new_session);
    // Read-ahead: one read() takes what the socket holds (up to OpenSSL's read buffer), not a
    // record header and then its body; with it, `tg_tls_conn_drained` can tell the reader
    // that another SSL_read would only meet an empty socket. Upstream pools hold few
    // connections, so the buffer each keeps costs little.
    SSL_CTX_set_read_ahead(ctx, 1);
    if (cert_file) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
            tg_tls_error_text("cannot load cert_file", err, errlen);
            SSL_CTX_free(ctx);
            return NULL;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            tg_tls_error_text("cannot load key_file (or it does not match cert_file)", err, errlen);
            SSL_CTX_free(ctx);
            return NULL;
        }
    }
    return ctx;
}

tg_tls_session_slot *tg_tls_session_slot_new(void) { return calloc(1, sizeof(tg_tls_session_slot)); }

void tg_tls_session_slot_free(tg_tls_session_slot *slot) {
    if (!slot) return;
    if (slot->session) SSL_SESSION_free(slot->session);
    free(slot);
}

int tg_tls_session_slot_filled(const tg_tls_session_slot *slot) { return slot->session != NULL; }

tg_tls_conn *tg_tls_client_conn_new(void *ctx, int fd, const char *server_name, int check_name,
                                    tg_tls_session_slot *slot, char *err, size_t errlen) {
    tg_tls_conn *conn = tg_tls_conn_new(ctx, fd, err, errlen);
    if (!conn) return NULL;
    SSL_set_connect_state(conn->ssl);
    // A pool's connections are few and busy: keep their record buffers rather than free
    // and allocate 16 KB+ twice per exchange.
    SSL_clear_mode(conn->ssl, SSL_MODE_RELEASE_BUFFERS);
    SSL_set_app_data(conn->ssl, conn);
    conn->slot = slot;
    int ip = is_ip_literal(server_name);
    // RFC 6066 §3: no IP literal in SNI.
    if (!ip && SSL_set_tlsext_host_name(conn->ssl, server_name) != 1) {
        tg_tls_error_text("cannot set the TLS server name (SNI)", err, errlen);
        tg_tls_conn_free(conn);
        return NULL;
    }
    if (check_name) {
        X509_VERIFY_PARAM *param = SSL_get0_param(conn->ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name)
                     : X509_VERIFY_PARAM_set1_host(param, server_name, 0);
        if (set != 1) {
            tg_tls_error_text("cannot set the name to verify", err, errlen);
            tg_tls_conn_free(conn);
            return NULL;
        }
    }
    // Offered as a copy, for the reason `keep_new_session` gives (a TLS 1.2 resumption
    // keeps using the offered object). A session the server does not take only costs a
    // full handshake; SSL_set_session failing likewise.
    if (slot && slot->session) {
        SSL_SESSION *copy = SSL_SESSION_dup(slot->session);
        if (!copy || SSL_set_session(conn->ssl, copy) != 1) ERR_clear_error();
        SSL_SESSION_free(copy);
    }
    return conn;
}

int tg_tls_conn_handshake(tg_tls_conn *conn, int *status) {
    ERR_clear_error();
    int rc = SSL_do_handshake(conn->ssl);
    if (rc == 1) return 1;
    int code = SSL_get_error(conn->ssl, rc);
    if (code == SSL_ERROR_WANT_READ) { *status = TG_TLS_WANT_READ; return 0; }
    if (code == SSL_ERROR_WANT_WRITE) { *status = TG_TLS_WANT_WRITE; return 0; }
    conn->failed = 1;
    describe_handshake_failure(conn, code == SSL_ERROR_ZERO_RETURN || code == SSL_ERROR_SYSCALL
                                         ? "TLS handshake: the server closed the connection" : "TLS handshake");
    // Whatever went wrong, the next connection starts afresh.
    if (conn->slot && conn->slot->session) {
        SSL_SESSION_free(conn->slot->session);
        conn->slot->session = NULL;
    }
    *status = TG_TLS_FAILED;
    return 0;
}

/// The verify result first (what an operator needs: "certificate has expired"), then the
/// OpenSSL error queue, or errno for a socket error.
static void describe_handshake_failure(tg_tls_conn *conn, const char *what) {
    int saved = errno;
    long verify = SSL_get_verify_result(conn->ssl);
    if (verify != X509_V_OK) {
        snprintf(conn->error, sizeof conn->error, "certificate verify failed: %s", X509_verify_cert_error_string(verify));
        ERR_clear_error();
        return;
    }
    if (ERR_peek_error() == 0) {
        snprintf(conn->error, sizeof conn->error, "%s%s%s", what, saved ? ": " : "", saved ? strerror(saved) : "");
        return;
    }
    tg_tls_error_text(what, conn->error, sizeof conn->error);
}

int tg_tls_conn_session_reused(const tg_tls_conn *conn) { return SSL_session_reused(conn->ssl); }

int tg_tls_conn_client_certificate(const tg_tls_conn *conn, unsigned char sha256[32], char *subject,
                                   size_t subjectlen, char *uris, size_t urislen) {
    // A resumed session keeps the certificate and the verify result of its full handshake.
    X509 *cert = SSL_get0_peer_certificate(conn->ssl);
    if (!cert || SSL_get_verify_result(conn->ssl) != X509_V_OK || subjectlen == 0 || urislen == 0) return 0;
    unsigned int n = 32;
    if (X509_digest(cert, EVP_sha256(), sha256, &n) != 1 || n != 32) { ERR_clear_error(); return 0; }
    subject[0] = 0;
    BIO *out = BIO_new(BIO_s_mem());
    if (out && X509_NAME_print_ex(out, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
        // RFC 4514 §2.4 escaping (controls and every UTF-8 byte above 0x7f as \XX) leaves
        // printable ASCII only; anything else still there is escaped the same way, so the
        // text is always a valid header field value.
        char *bytes = NULL;
        long len = BIO_get_mem_data(out, &bytes);
        size_t w = 0;
        long i = 0;
        for (; i < len && w + 4 < subjectlen; i++) {
            unsigned char c = (unsigned char)bytes[i];
            if (c >= 0x20 && c < 0x7f) subject[w++] = (char)c;
            else w += (size_t)snprintf(subject + w, subjectlen - w, "\\%02X", c);
        }
        // A subject cut short would name someone else: none at all rather.
        subject[i < len ? 0 : w] = 0;
    }
    BIO_free(out);
    uris[0] = 0;
    size_t w = 0;
    GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
        if (g->type != GEN_URI) continue;
        const unsigned char *u = ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
        int len = ASN1_STRING_length(g->d.uniformResourceIdentifier);
        int clean = len > 0;
        for (int k = 0; clean && k < len; k++) clean = u[k] > 0x20 && u[k] < 0x7f;
        // One that cannot be passed on ends the list: a later URI must never stand in as
        // the certificate's first.
        if (!clean || w + (size_t)len + 2 > urislen) break;
        memcpy(uris + w, u, (size_t)len);
        w += (size_t)len;
        uris[w++] = '\n';
        uris[w] = 0;
    }
    GENERAL_NAMES_free(sans);
    ERR_clear_error();
    return 1;
}

void tg_tls_conn_free(tg_tls_conn *conn) {
    if (!conn) return;
    SSL_free(conn->ssl);
    free(conn);
}

/// Classifies a failed SSL_read/SSL_write/SSL_shutdown and leaves the error queue empty.
static int conn_status(tg_tls_conn *conn, int rc, const char *what) {
    int saved = errno;
    int code = SSL_get_error(conn->ssl, rc);
    switch (code) {
    case SSL_ERROR_WANT_READ: return TG_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return TG_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return TG_TLS_CLOSED;
    default: break;
    }
    conn->failed = 1;
    unsigned long first = ERR_peek_error();
    if (code == SSL_ERROR_SYSCALL && first == 0) {
        ERR_clear_error();
        // A TCP end with no close_notify (OpenSSL 1.1) or a reset: the peer is gone.
        if (saved == 0 || saved == ECONNRESET || saved == EPIPE) return TG_TLS_CLOSED;
        snprintf(conn->error, sizeof conn->error, "%s: %s", what, strerror(saved));
        return TG_TLS_FAILED;
    }
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
    // OpenSSL 3 reports a TCP end with no close_notify as this error.
    if (ERR_GET_LIB(first) == ERR_LIB_SSL && ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        return TG_TLS_CLOSED;
    }
#endif
    tg_tls_error_text(what, conn->error, sizeof conn->error);
    // A real protocol failure (a bad record, a fatal alert): its session is not offered again.
    if (conn->slot && conn->slot->session) {
        SSL_SESSION_free(conn->slot->session);
        conn->slot->session = NULL;
    }
    return TG_TLS_FAILED;
}

int tg_tls_conn_read(tg_tls_conn *conn, void *buf, int len, int *status) {
    // SSL_get_error reads the thread's queue: anything another library left there (JOSE,
    // curl, Redis' TLS bufferevents share the thread) would be taken for this call's error.
    ERR_clear_error();
    int n = SSL_read(conn->ssl, buf, len);
    if (n > 0) return n;
    *status = conn_status(conn, n, "TLS read");
    return 0;
}

int tg_tls_conn_write(tg_tls_conn *conn, const void *buf, int len, int *status) {
    ERR_clear_error();
    int n = SSL_write(conn->ssl, buf, len);
    if (n > 0) return n;
    *status = conn_status(conn, n, "TLS write");
    return 0;
}

int tg_tls_conn_pending(const tg_tls_conn *conn) { return SSL_has_pending(conn->ssl); }

int tg_tls_conn_drained(const tg_tls_conn *conn) {
    return SSL_get_read_ahead(conn->ssl) && !SSL_has_pending(conn->ssl);
}

int tg_tls_conn_shutdown(tg_tls_conn *conn) {
    if (conn->shut) return 1;
    if (conn->failed || !SSL_is_init_finished(conn->ssl)) return 0;
    conn->shut = 1;
    ERR_clear_error();
    // 0: our close_notify is out (the peer's is not awaited); 1: both were; < 0: the socket
    // did not take it (full, or reset), which a closing connection does not wait for.
    int rc = SSL_shutdown(conn->ssl);
    ERR_clear_error();
    return rc >= 0;
}

const char *tg_tls_conn_error(const tg_tls_conn *conn) { return conn->error; }

void *tg_tls_client_ctx_new(const char *ca_file, int insecure_skip_verify, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) { tg_tls_error_text("SSL_CTX_new", err, errlen); return NULL; }
    tg_ssl_ctx_harden(ctx);
    if (insecure_skip_verify) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        return ctx;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int loaded = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                         : SSL_CTX_set_default_verify_paths(ctx);
    if (loaded != 1) {
        tg_tls_error_text(ca_file ? "cannot load ca_file" : "cannot load the system CA certificates", err, errlen);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static int is_ip_literal(const char *name) {
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

struct bufferevent *tg_tls_connecting_bufferevent(struct event_base *base, void *ctx, const char *server_name,
                                                  int check_name, char *err, size_t errlen) {
    SSL *ssl = SSL_new((SSL_CTX *)ctx);
    if (!ssl) { tg_tls_error_text("SSL_new", err, errlen); return NULL; }
    int ip = is_ip_literal(server_name);
    if (!ip && SSL_set_tlsext_host_name(ssl, server_name) != 1) {
        tg_tls_error_text("cannot set the TLS server name (SNI)", err, errlen);
        SSL_free(ssl);
        return NULL;
    }
    if (check_name) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name)
                     : X509_VERIFY_PARAM_set1_host(param, server_name, 0);
        if (set != 1) {
            tg_tls_error_text("cannot set the name to verify", err, errlen);
            SSL_free(ssl);
            return NULL;
        }
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                             BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        // Not freed here: libevent 2.1 frees the SSL itself on most of its failure paths
        // (BEV_OPT_CLOSE_ON_FREE), and a leak on out-of-memory beats a double free.
        snprintf(err, errlen, "bufferevent_openssl_socket_new failed");
        return NULL;
    }
    // Redis (and a killed server) may close the TCP connection without a TLS close_notify:
    // report that as end of stream, not as an error with no error code to explain it.
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void tg_tls_describe_failure(struct bufferevent *bev, char *buf, size_t buflen) {
    size_t used = 0;
    buf[0] = 0;
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (verify != X509_V_OK) {
        used += (size_t)snprintf(buf, buflen, "certificate verify failed: %s", X509_verify_cert_error_string(verify));
    }
    unsigned long code;
    while ((code = bufferevent_get_openssl_error(bev)) != 0 && used + 2 < buflen) {
        char one[256];
        ERR_error_string_n(code, one, sizeof one);
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s", used ? "; " : "", one);
    }
}

// ALPN (RFC 7301 §3.2): the server picks from its own list in its order, so a client
// offering both gets h2 when the listener serves it. No overlap: no ALPN extension in the
// answer (the connection goes on as HTTP/1.1, rather than failing with
// no_application_protocol, which old clients that offer only something else would meet).
static const unsigned char alpn_h2[] = "\x02h2\x08http/1.1";
static const unsigned char alpn_h1[] = "\x08http/1.1";

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl;
    const unsigned char *server = arg ? alpn_h2 : alpn_h1;
    unsigned int server_len = arg ? sizeof alpn_h2 - 1 : sizeof alpn_h1 - 1;
    unsigned char *chosen = NULL;
    if (SSL_select_next_proto(&chosen, outlen, server, server_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

void tg_tls_server_ctx_set_alpn(void *ctx, int h2) {
    // The argument only says which list: non-NULL for h2.
    SSL_CTX_set_alpn_select_cb((SSL_CTX *)ctx, select_alpn, h2 ? (void *)alpn_h2 : NULL);
}

void tg_tls_client_ctx_offer_h2(void *ctx) {
    // An upstream spoken to in HTTP/2 over TLS must agree to h2 (RFC 9113 §3.2): only h2 is
    // offered, and the connection checks that it was chosen.
    static const unsigned char h2_only[] = "\x02h2";
    SSL_CTX_set_alpn_protos((SSL_CTX *)ctx, h2_only, sizeof h2_only - 1);
}

int tg_tls_conn_alpn_is_h2(const tg_tls_conn *conn) {
    const unsigned char *proto = NULL;
    unsigned int len = 0;
    SSL_get0_alpn_selected(conn->ssl, &proto, &len);
    return len == 2 && memcmp(proto, "h2", 2) == 0;
}
