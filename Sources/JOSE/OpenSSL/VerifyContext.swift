internal import COpenSSL

/// A verification context set up once for one key and one algorithm, then only ever copied.
///
/// `EVP_DigestVerifyInit` is not free: it fetches the signature method and the digest from the
/// provider (name lookups, locks), makes the provider's key context and, for PS256, sets the
/// padding, MGF1 digest and salt length. Done once here per key; each verification then works on
/// its own copy (`EVP_MD_CTX_copy_ex`, which duplicates the `EVP_PKEY_CTX` with
/// `EVP_PKEY_CTX_dup` and the provider's `dupctx`), so the per-token cost is the copy, the
/// digest and the public-key operation.
///
/// Thread safety — why one template may be shared by every worker thread:
/// - After `init` the template is never updated, finalised or re-initialised: its only use is
///   as the `const EVP_MD_CTX *in` of `EVP_MD_CTX_copy_ex(out, in)` (and `EVP_PKEY_CTX_dup`
///   takes `const EVP_PKEY_CTX *` too). openssl-threads(7), OpenSSL 3.0: "Objects are
///   thread-safe as long as the API's being invoked don't modify the object; in this case the
///   parameter is usually marked in the API as const."
/// - What the copy does to the source is read it and take references (`EVP_PKEY_up_ref`,
///   `EVP_SIGNATURE_up_ref`, `EVP_MD_up_ref`, `RSA_up_ref` / `EC_KEY_up_ref` in the provider's
///   `dupctx`), which are atomic: openssl-threads(7) names reference counting as the main use of
///   OpenSSL's thread API. The provider's digest state inside is copied, not shared.
/// - The verification itself runs on the copy, which belongs to one call on one thread, and is
///   finalised in place (`EVP_MD_CTX_FLAG_FINALISE`; EVP_DigestInit(3): without it
///   `EVP_DigestVerifyFinal` would work on yet another duplicate, so that more data could be
///   added afterwards — needless here).
/// `VerifyContextTests` checks it from several threads at once (run under ThreadSanitizer).
final class VerifyContext: @unchecked Sendable {
    let alg: JWSAlgorithm
    /// Owned; freed in `deinit`. Holds its own reference to the key.
    private let template: OpaquePointer

    /// nil if OpenSSL cannot set up or copy such a context for this key; verification then
    /// falls back to a fresh context per token (`SignatureEngine`).
    init?(alg: JWSAlgorithm, pkey: PKey) {
        guard let ctx = EVP_MD_CTX_new() else {
            OpenSSLError.clear()
            return nil
        }
        guard Self.initialize(ctx, alg: alg, pkey: pkey), Self.copyWorks(ctx) else {
            EVP_MD_CTX_free(ctx)
            OpenSSLError.clear()
            return nil
        }
        self.alg = alg
        template = ctx
    }

    deinit { EVP_MD_CTX_free(template) }

    /// Sets `ctx` up to verify `alg` with `pkey`: digest, and for RSASSA-PSS the parameters
    /// RFC 7518 §3.5 fixes (MGF1 with the same hash, salt as long as the hash).
    static func initialize(_ ctx: OpaquePointer, alg: JWSAlgorithm, pkey: PKey) -> Bool {
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(ctx, &pctx, alg.digest?.md, nil, pkey.pointer) == 1 else { return false }
        return configure(alg, pctx)
    }

    static func configure(_ alg: JWSAlgorithm, _ pctx: OpaquePointer?) -> Bool {
        guard alg.family == .rsaPSS, let pctx, let digest = alg.digest else { return true }
        return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, Int32(digest.size)) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, digest.md) == 1
    }

    /// Whether this OpenSSL can copy such a context (every provider signature of OpenSSL 3.0
    /// has a `dupctx`, but a third-party provider need not).
    private static func copyWorks(_ ctx: OpaquePointer) -> Bool {
        guard let probe = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(probe) }
        return EVP_MD_CTX_copy_ex(probe, ctx) == 1
    }

    /// Verifies `signature` (OpenSSL's encoding: DER for ECDSA) over `message`.
    func verify(message: UnsafeBufferPointer<UInt8>, signature: UnsafeBufferPointer<UInt8>) throws -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { throw OpenSSLError.make("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_MD_CTX_copy_ex(ctx, template) == 1 else { throw OpenSSLError.make("EVP_MD_CTX_copy_ex") }
        EVP_MD_CTX_set_flags(ctx, EVP_MD_CTX_FLAG_FINALISE)
        let rc = EVP_DigestVerify(ctx, signature.baseAddress, signature.count, message.baseAddress, message.count)
        if rc != 1 { OpenSSLError.clear() }
        return rc == 1
    }
}
