// LD_PRELOAD shim for the mTLS benchmark: wrk has no option for a client certificate, so
// every OpenSSL client context it makes gets the one named by TG_BENCH_CLIENT_CERT and
// TG_BENCH_CLIENT_KEY (PEM files) right after SSL_CTX_new. Built by bench/mtls.sh; never
// part of tokengate.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>

SSL_CTX *SSL_CTX_new(const SSL_METHOD *method) {
    SSL_CTX *(*real)(const SSL_METHOD *) = (SSL_CTX * (*)(const SSL_METHOD *)) dlsym(RTLD_NEXT, "SSL_CTX_new");
    SSL_CTX *ctx = real(method);
    const char *cert = getenv("TG_BENCH_CLIENT_CERT"), *key = getenv("TG_BENCH_CLIENT_KEY");
    if (ctx && cert && key &&
        (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)) {
        fprintf(stderr, "client_cert.c: cannot load %s / %s\n", cert, key);
        abort();
    }
    return ctx;
}
