#include "tg_tls.h"
#include "tg_openssl.h"
#include <openssl/err.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/x509v3.h>

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

void *tg_tls_client_ctx_new(const char *ca_file, int insecure_skip_verify, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) { drain_errors("SSL_CTX_new", err, errlen); return NULL; }
    tg_ssl_ctx_harden(ctx);
    if (insecure_skip_verify) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        return ctx;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int loaded = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                         : SSL_CTX_set_default_verify_paths(ctx);
    if (loaded != 1) {
        drain_errors(ca_file ? "cannot load ca_file" : "cannot load the system CA certificates", err, errlen);
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
    if (!ssl) { drain_errors("SSL_new", err, errlen); return NULL; }
    int ip = is_ip_literal(server_name);
    if (!ip && SSL_set_tlsext_host_name(ssl, server_name) != 1) {
        drain_errors("cannot set the TLS server name (SNI)", err, errlen);
        SSL_free(ssl);
        return NULL;
    }
    if (check_name) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name)
                     : X509_VERIFY_PARAM_set1_host(param, server_name, 0);
        if (set != 1) {
            drain_errors("cannot set the name to verify", err, errlen);
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
