// OpenSSL entry points that are macros (and so invisible to Swift) get a function here.
#ifndef TG_OPENSSL_H
#define TG_OPENSSL_H
#include <openssl/crypto.h>
#include <openssl/ssl.h>

/// OPENSSL_free is a macro.
void tg_openssl_free(void *ptr);
/// SSL_CTX_set_options may be a macro in some versions.
void tg_ssl_ctx_harden(SSL_CTX *ctx);
#endif
