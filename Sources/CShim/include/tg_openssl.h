// OpenSSL entry points that are macros (and so invisible to Swift) get a function here.
#ifndef TG_OPENSSL_H
#define TG_OPENSSL_H
#include <openssl/crypto.h>
#include <openssl/ssl.h>

/// OPENSSL_free is a macro.
void tg_openssl_free(void *ptr);
/// SSL_CTX_set_options may be a macro in some versions.
void tg_ssl_ctx_harden(SSL_CTX *ctx);
/// One-shot SHA-256 on a stack context: OpenSSL 3's EVP_Digest (and SHA256(), which calls it)
/// allocates a context and looks the algorithm up on every call, about 6,000 instructions
/// before hashing a byte; this runs the same block function without that setup.
void tg_sha256(const void *data, size_t count, unsigned char out[32]);
#endif
