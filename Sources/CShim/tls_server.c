#include "tg_tls_server.h"
#include "tg_tls.h"
#include "tg_openssl.h"
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Mozilla's "intermediate" lists (Server Side TLS, version 5.7), without the DHE suites:
// ECDHE only, AEAD only, so no CBC (LUCKY13) and no static-RSA key exchange.
static const char *intermediate_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
static const char *default_ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
static const char *default_curves = "X25519:P-256:P-384";

// ---- certificate sets ----

struct tg_tls_cert_entry {
    X509 *leaf;
    EVP_PKEY *key;
    STACK_OF(X509) *chain;
    int key_type;
    // Served to clients without SNI or with a name no certificate has: the first entry,
    // and later ones of another key type for exactly the first one's names.
    int is_default;
};

struct tg_tls_certs {
    struct tg_tls_cert_entry *entries;
    int count;
};

tg_tls_certs *tg_tls_certs_new(void) { return calloc(1, sizeof(tg_tls_certs)); }

void tg_tls_certs_free(tg_tls_certs *certs) {
    if (!certs) return;
    for (int i = 0; i < certs->count; i++) {
        X509_free(certs->entries[i].leaf);
        EVP_PKEY_free(certs->entries[i].key);
        sk_X509_pop_free(certs->entries[i].chain, X509_free);
    }
    free(certs->entries);
    free(certs);
}

/// Both certificates carry a subjectAltName, with the same names in any order.
static int same_dns_names(X509 *a, X509 *b) {
    GENERAL_NAMES *na = X509_get_ext_d2i(a, NID_subject_alt_name, NULL, NULL);
    GENERAL_NAMES *nb = X509_get_ext_d2i(b, NID_subject_alt_name, NULL, NULL);
    int same = na != NULL && nb != NULL && sk_GENERAL_NAME_num(na) == sk_GENERAL_NAME_num(nb);
    // Each name of one is among the other's (the counts are equal; names are few).
    for (int i = 0; same && i < sk_GENERAL_NAME_num(na); i++) {
        GENERAL_NAME *x = sk_GENERAL_NAME_value(na, i);
        int found = 0;
        for (int j = 0; !found && j < sk_GENERAL_NAME_num(nb); j++) found = GENERAL_NAME_cmp(x, sk_GENERAL_NAME_value(nb, j)) == 0;
        same = found;
    }
    GENERAL_NAMES_free(na);
    GENERAL_NAMES_free(nb);
    return same;
}

/// Never asks for a passphrase (OpenSSL's default callback would prompt on the terminal).
static int no_passphrase(char *buf, int size, int rwflag, void *arg) {
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)arg;
    return -1;
}

/// How far a certificate's notBefore may be ahead of this clock (a CA that does not backdate,
/// a clock a little behind).
static const time_t not_before_skew = 300;

int tg_tls_certs_add(tg_tls_certs *certs, const char *cert_file, const char *key_file, double *not_after, char *err,
                     size_t errlen) {
    ERR_clear_error();
    BIO *in = BIO_new_file(cert_file, "r");
    if (!in) { tg_tls_error_text("cannot read cert_file", err, errlen); return 0; }
    X509 *leaf = PEM_read_bio_X509_AUX(in, NULL, NULL, NULL);
    STACK_OF(X509) *chain = sk_X509_new_null();
    X509 *extra;
    int chain_broken = 0;
    while (leaf && chain && (extra = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL) {
        if (!sk_X509_push(chain, extra)) { X509_free(extra); chain_broken = 1; break; }
    }
    BIO_free(in);
    // The end of the file reads as "no start line"; any other error is a damaged block,
    // which would otherwise leave the chain cut short without a word.
    unsigned long last = ERR_peek_last_error();
    if (last != 0 && !(ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE)) chain_broken = 1;
    ERR_clear_error();
    if (!leaf || !chain || chain_broken) {
        snprintf(err, errlen, leaf ? "cert_file: a certificate of the chain cannot be read" : "cert_file holds no PEM certificate");
        X509_free(leaf);
        sk_X509_pop_free(chain, X509_free);
        return 0;
    }
    EVP_PKEY *key = NULL;
    in = BIO_new_file(key_file, "r");
    if (in) {
        key = PEM_read_bio_PrivateKey(in, NULL, no_passphrase, NULL);
        BIO_free(in);
    }
    const char *problem = NULL;
    if (!key) problem = "cannot read key_file (a PEM private key without a passphrase)";
    else if (X509_check_private_key(leaf, key) != 1) problem = "key_file does not match cert_file";
    else if (X509_cmp_time(X509_get0_notBefore(leaf), &(time_t){time(NULL) + not_before_skew}) != -1)
        problem = "the certificate is not valid yet";
    else if (X509_cmp_current_time(X509_get0_notAfter(leaf)) != 1) problem = "the certificate has expired";
    if (problem) {
        tg_tls_error_text(problem, err, errlen);
        X509_free(leaf);
        EVP_PKEY_free(key);
        sk_X509_pop_free(chain, X509_free);
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    *not_after = ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) == 1 ? (double)timegm(&tm) : 0;
    struct tg_tls_cert_entry *grown = realloc(certs->entries, (size_t)(certs->count + 1) * sizeof *grown);
    if (!grown) {
        snprintf(err, errlen, "out of memory");
        X509_free(leaf);
        EVP_PKEY_free(key);
        sk_X509_pop_free(chain, X509_free);
        return 0;
    }
    certs->entries = grown;
    struct tg_tls_cert_entry *e = &certs->entries[certs->count];
    e->leaf = leaf;
    e->key = key;
    e->chain = chain;
    e->key_type = EVP_PKEY_get_base_id(key);
    e->is_default = certs->count == 0;
    if (!e->is_default && same_dns_names(leaf, certs->entries[0].leaf)) {
        int taken = 0;
        for (int i = 0; i < certs->count; i++) taken |= certs->entries[i].is_default && certs->entries[i].key_type == e->key_type;
        e->is_default = !taken;
    }
    certs->count++;
    return 1;
}

void tg_tls_certs_fingerprint(const tg_tls_certs *certs, int index, unsigned char out[32]) {
    unsigned int n = 32;
    memset(out, 0, 32);
    if (index >= 0 && index < certs->count) X509_digest(certs->entries[index].leaf, EVP_sha256(), out, &n);
}

// ---- the server context ----

struct tg_tls_server {
    SSL_CTX *ctx;
    // Guards `certs` and the client CAs: handshakes on every worker read them, the main
    // thread replaces them.
    pthread_mutex_t lock;
    tg_tls_certs *certs;
    // mTLS: the store client certificates are verified with (CAs, CRLs) and the CA names
    // sent in the CertificateRequest; NULL when clients are not asked for certificates.
    X509_STORE *client_store;
    STACK_OF(X509_NAME) *client_names;
};

/// Gives the connection every certificate chosen for `name` (one per key type, in the
/// config's order); OpenSSL then picks among them by the client's signature algorithms.
static int use_matching(SSL *ssl, const tg_tls_certs *certs, const char *name, unsigned int flags) {
    int used_types[8];
    int used = 0;
    for (int i = 0; i < certs->count; i++) {
        const struct tg_tls_cert_entry *e = &certs->entries[i];
        if (name ? X509_check_host(e->leaf, name, 0, flags, NULL) != 1 : !e->is_default) continue;
        int seen = 0;
        for (int k = 0; k < used; k++) seen |= used_types[k] == e->key_type;
        if (seen || used == 8) continue;
        if (SSL_use_cert_and_key(ssl, e->leaf, e->key, e->chain, 1) != 1) return -1;
        used_types[used++] = e->key_type;
    }
    return used;
}

/// Runs before the cipher suite is chosen (SSL_CTX_set_cert_cb), for every full handshake.
static int choose_certificate(SSL *ssl, void *arg) {
    tg_tls_server *server = arg;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    pthread_mutex_lock(&server->lock);
    int used = 0;
    if (server->certs && name) {
        // An exact name first, then a wildcard over one label (RFC 6125 §6.4.3).
        used = use_matching(ssl, server->certs, name, X509_CHECK_FLAG_NO_WILDCARDS);
        if (used == 0) used = use_matching(ssl, server->certs, name, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    if (server->certs && used == 0) used = use_matching(ssl, server->certs, NULL, 0);
    // The client CAs of now (they rotate like the certificates): each handshake holds its
    // own references, so a replaced store lives until the last one using it is done.
    int cas = 1;
    if (server->client_store) {
        STACK_OF(X509_NAME) *names = SSL_dup_CA_list(server->client_names);
        cas = names != NULL && SSL_set1_verify_cert_store(ssl, server->client_store) == 1;
        if (names) SSL_set_client_CA_list(ssl, names);
    }
    pthread_mutex_unlock(&server->lock);
    return used > 0 && cas ? 1 : 0;
}

/// The certificate is chosen by the name (in `choose_certificate`): the server says it used
/// it with an empty server_name extension (RFC 6066 §3), as nginx does.
static int acknowledge_server_name(SSL *ssl, int *alert, void *arg) {
    (void)ssl;
    (void)alert;
    (void)arg;
    return SSL_TLSEXT_ERR_OK;
}

/// Applies the profile's versions and lists; 0 with a message in `err` on a bad list.
static int apply_profile(SSL_CTX *ctx, int profile, const char *ciphers, const char *ciphersuites, const char *curves,
                         char *err, size_t errlen) {
    tg_ssl_ctx_harden(ctx);
    if (profile != TG_TLS_PROFILE_CUSTOM) {
        // Every suite offered is strong; the client knows best whether it has AES in hardware.
        SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
        ciphers = ciphersuites = curves = NULL;
    }
    if (profile == TG_TLS_PROFILE_MODERN) SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    if (ciphers && *ciphers == 0 && ciphersuites && *ciphersuites == 0) {
        snprintf(err, errlen, "ciphers and ciphersuites are both empty: no suite is left");
        return 0;
    }
    if (ciphers && *ciphers == 0) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    } else if (SSL_CTX_set_cipher_list(ctx, ciphers ? ciphers : intermediate_ciphers) != 1) {
        tg_tls_error_text("ciphers: no TLS 1.2 suite OpenSSL knows is left", err, errlen);
        return 0;
    }
    if (ciphersuites && *ciphersuites == 0) {
        SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    } else if (SSL_CTX_set_ciphersuites(ctx, ciphersuites ? ciphersuites : default_ciphersuites) != 1) {
        tg_tls_error_text("ciphersuites: a TLS 1.3 suite OpenSSL does not know", err, errlen);
        return 0;
    }
    if (SSL_CTX_set1_groups_list(ctx, curves ? curves : default_curves) != 1) {
        tg_tls_error_text("curves: a group OpenSSL does not know", err, errlen);
        return 0;
    }
    // A TLS 1.2 list must keep a suite a certificate can serve (RSA or ECDSA signatures).
    if (!(ciphers && *ciphers == 0)) {
        STACK_OF(SSL_CIPHER) *list = SSL_CTX_get_ciphers(ctx);
        int servable = 0;
        for (int i = 0; i < sk_SSL_CIPHER_num(list); i++) {
            const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
            int auth = SSL_CIPHER_get_auth_nid(c);
            // TLS 1.3 suites say NID_auth_any: only TLS 1.2 ones name RSA or ECDSA.
            servable |= auth == NID_auth_rsa || auth == NID_auth_ecdsa;
        }
        if (!servable) {
            snprintf(err, errlen, "ciphers: no TLS 1.2 suite left that an RSA or ECDSA certificate can serve");
            return 0;
        }
    }
    // No session tickets: a ticket key would have to be shared by every worker and rotated.
    // Resumption uses the context's own session cache instead, which every worker shares
    // (one context per listener); TLS 1.3 then sends tickets that only name a cached session.
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(ctx, 20480);
    SSL_CTX_set_timeout(ctx, 3600);
    static const unsigned char sid_ctx[] = "tokengate";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
    return 1;
}

tg_tls_server *tg_tls_server_new(int profile, const char *ciphers, const char *ciphersuites, const char *curves,
                                 int h2, char *err, size_t errlen) {
    ERR_clear_error();
    tg_tls_server *server = calloc(1, sizeof *server);
    if (!server) { snprintf(err, errlen, "out of memory"); return NULL; }
    server->ctx = SSL_CTX_new(TLS_server_method());
    if (!server->ctx) { tg_tls_error_text("SSL_CTX_new", err, errlen); free(server); return NULL; }
    if (!apply_profile(server->ctx, profile, ciphers, ciphersuites, curves, err, errlen)) {
        SSL_CTX_free(server->ctx);
        free(server);
        return NULL;
    }
    // Read-ahead: one read() takes what the socket holds, not a record header and then its
    // body (two syscalls per record, per HTTP/2 request when a client sends one per record).
    // The read buffer is the one OpenSSL allocates anyway, given back when idle
    // (SSL_MODE_RELEASE_BUFFERS).
    SSL_CTX_set_read_ahead(server->ctx, 1);
    pthread_mutex_init(&server->lock, NULL);
    SSL_CTX_set_cert_cb(server->ctx, choose_certificate, server);
    SSL_CTX_set_tlsext_servername_callback(server->ctx, acknowledge_server_name);
    tg_tls_server_ctx_set_alpn(server->ctx, h2);
    return server;
}

void tg_tls_server_free(tg_tls_server *server) {
    if (!server) return;
    SSL_CTX_free(server->ctx);
    tg_tls_certs_free(server->certs);
    X509_STORE_free(server->client_store);
    sk_X509_NAME_pop_free(server->client_names, X509_NAME_free);
    pthread_mutex_destroy(&server->lock);
    free(server);
}

void *tg_tls_server_ctx(tg_tls_server *server) { return server->ctx; }

void tg_tls_server_set_certs(tg_tls_server *server, tg_tls_certs *certs) {
    pthread_mutex_lock(&server->lock);
    tg_tls_certs *old = server->certs;
    server->certs = certs;
    pthread_mutex_unlock(&server->lock);
    // A handshake that took the old set's objects holds its own references to them.
    tg_tls_certs_free(old);
}

void tg_tls_server_verify_clients(tg_tls_server *server, int required) {
    SSL_CTX_set_verify(server->ctx, SSL_VERIFY_PEER | (required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
    // A leaf, intermediates and the CA: deeper chains are not what a client presents.
    SSL_CTX_set_verify_depth(server->ctx, 5);
}

int tg_tls_server_set_client_cas(tg_tls_server *server, const char *ca_file, const char *crl_file, char *err,
                                 size_t errlen) {
    ERR_clear_error();
    X509_STORE *store = X509_STORE_new();
    STACK_OF(X509_NAME) *names = store ? SSL_load_client_CA_file(ca_file) : NULL;
    const char *problem = NULL;
    if (!store) problem = "out of memory";
    else if (!names || sk_X509_NAME_num(names) == 0) problem = "client_ca_file: cannot read it, or it holds no PEM certificate";
    else if (X509_STORE_load_file(store, ca_file) != 1) problem = "client_ca_file: a certificate cannot be read";
    else if (crl_file) {
        // Every CRL in the file, PEM; a leaf its CA revoked fails the handshake. Only leaves
        // are checked (X509_V_FLAG_CRL_CHECK): intermediates need no CRL of their own.
        X509_LOOKUP *lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());
        if (!lookup || X509_load_crl_file(lookup, crl_file, X509_FILETYPE_PEM) < 1) problem = "client_crl_file: cannot read it, or it holds no PEM CRL";
        else X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
    }
    if (problem) {
        tg_tls_error_text(problem, err, errlen);
        X509_STORE_free(store);
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return 0;
    }
    pthread_mutex_lock(&server->lock);
    X509_STORE *old_store = server->client_store;
    STACK_OF(X509_NAME) *old_names = server->client_names;
    server->client_store = store;
    server->client_names = names;
    pthread_mutex_unlock(&server->lock);
    X509_STORE_free(old_store);
    sk_X509_NAME_pop_free(old_names, X509_NAME_free);
    // A cached session keeps the certificate its full handshake verified: after the CAs or
    // CRLs change, every client verifies again (a revoked certificate must not resume).
    if (old_store) SSL_CTX_flush_sessions(server->ctx, LONG_MAX);
    return 1;
}

int tg_tls_server_check_certs(tg_tls_server *server, const tg_tls_certs *certs, char *err, size_t errlen) {
    ERR_clear_error();
    SSL *ssl = SSL_new(server->ctx);
    if (!ssl) { tg_tls_error_text("SSL_new", err, errlen); return -2; }
    for (int i = 0; i < certs->count; i++) {
        const struct tg_tls_cert_entry *e = &certs->entries[i];
        if (SSL_use_cert_and_key(ssl, e->leaf, e->key, e->chain, 1) != 1) {
            tg_tls_error_text("the certificate cannot be served (a key too small or a digest too weak for "
                              "OpenSSL's security level?)", err, errlen);
            SSL_free(ssl);
            return i;
        }
    }
    SSL_free(ssl);
    return -1;
}

int tg_tls_profile_check(int profile, const char *ciphers, const char *ciphersuites, const char *curves, char *err,
                         size_t errlen) {
    tg_tls_server *server = tg_tls_server_new(profile, ciphers, ciphersuites, curves, 0, err, errlen);
    tg_tls_server_free(server);
    return server != NULL;
}
