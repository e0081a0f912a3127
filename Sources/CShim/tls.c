#include "tg_tls.h"
#include "tg_openssl.h"
#include <openssl/err.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <string.h>

static void drain_errors(const char *what, char *err, size_t errlen) {
    unsigned long code;
    size_t used = (size_t)snprintf(err, errlen, "%s", what);
    while ((code = ERR_get_error()) != 0 && used + 2 < errlen) {
        char buf[256];
        ERR_error_string_n(code, buf, sizeof buf);
        used += (size_t)snprintf(err + used, errlen - used, "; %s", buf);
    }
}

void *tg_tls_server_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) { drain_errors("SSL_CTX_new", err, errlen); return NULL; }
    tg_ssl_ctx_harden(ctx);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        drain_errors("cannot load certificate", err, errlen);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        drain_errors("cannot load private key", err, errlen);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

void tg_tls_ctx_free(void *ctx) { SSL_CTX_free((SSL_CTX *)ctx); }

struct bufferevent *tg_tls_accepting_bufferevent(struct event_base *base, void *ctx) {
    SSL *ssl = SSL_new((SSL_CTX *)ctx);
    if (!ssl) return NULL;
    return bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}
