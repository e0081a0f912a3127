// SHA256_Init/Update/Final are deprecated in OpenSSL 3 (in favour of EVP) but kept in 3.x:
// they are the functions the default provider's SHA-256 itself calls.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "tg_openssl.h"
#include <openssl/sha.h>

void tg_openssl_free(void *ptr) { OPENSSL_free(ptr); }

void tg_ssl_ctx_harden(SSL_CTX *ctx) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
}

void tg_sha256(const void *data, size_t count, unsigned char out[32]) {
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, data, count);
    SHA256_Final(out, &c);
    OPENSSL_cleanse(&c, sizeof(c));
}
