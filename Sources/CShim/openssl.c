#include "tg_openssl.h"

void tg_openssl_free(void *ptr) { OPENSSL_free(ptr); }

void tg_ssl_ctx_harden(SSL_CTX *ctx) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
}
