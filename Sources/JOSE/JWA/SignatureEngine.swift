internal import COpenSSL

/// Raw signing and verification for one algorithm with one key, through OpenSSL's EVP API
/// only. JWS-level rules (which key, which algorithm) are decided before this runs.
enum SignatureEngine {
    static func verify(_ alg: JWSAlgorithm, key: JWK, message: UnsafeBufferPointer<UInt8>, signature: [UInt8]) throws
        -> Bool
    {
        switch key.material {
        case .symmetric(let secret):
            guard alg.family == .hmac else { throw JOSEError(.keyMismatch, "\(alg) cannot use a symmetric key") }
            let mac = try hmac(alg, secret: secret, message: message)
            // Constant time, and the length is public.
            return mac.count == signature.count && CRYPTO_memcmp(mac, signature, mac.count) == 0
        case .asymmetric(let pkey, _):
            var sig = signature
            if alg.family == .ecdsa {
                guard signature.count == alg.fixedSignatureSize else { return false }
                guard let der = ECDSASignature.der(fromRaw: signature) else { return false }
                sig = der
            } else if let size = alg.fixedSignatureSize, signature.count != size {
                return false
            } else if alg.keyType == "RSA", signature.count != pkey.signatureSize {
                // RFC 8017 §8.1.2 / §8.2.2 step 1: exactly k octets. OpenSSL's PSS path would
                // otherwise accept a signature with its leading zero octet dropped.
                return false
            }
            return try sig.withUnsafeBufferPointer { sig in
                if let context = key.verifyContext(for: alg) {
                    return try context.verify(message: message, signature: sig)
                }
                return try evpVerify(alg, pkey: pkey, message: message, signature: sig)
            }
        }
    }

    static func sign(_ alg: JWSAlgorithm, key: JWK, message: [UInt8]) throws -> [UInt8] {
        switch key.material {
        case .symmetric(let secret):
            return try message.withUnsafeBufferPointer { try hmac(alg, secret: secret, message: $0) }
        case .asymmetric(let pkey, let isPrivate):
            guard isPrivate else { throw JOSEError(.invalidKey, "signing needs a private key") }
            let sig = try evpSign(alg, pkey: pkey, message: message)
            if alg.family == .ecdsa {
                guard let raw = ECDSASignature.raw(fromDER: sig, size: alg.fixedSignatureSize! / 2) else {
                    throw JOSEError(.crypto, "ECDSA signature conversion failed")
                }
                return raw
            }
            return sig
        }
    }

    private static func hmac(_ alg: JWSAlgorithm, secret: [UInt8], message: UnsafeBufferPointer<UInt8>) throws
        -> [UInt8]
    {
        guard let digest = alg.digest, alg.family == .hmac else {
            throw JOSEError(.keyMismatch, "not an HMAC algorithm")
        }
        var out = [UInt8](repeating: 0, count: digest.size)
        var len: UInt32 = 0
        let ok = secret.withUnsafeBufferPointer { k in
            HMAC(digest.md, k.baseAddress, Int32(k.count), message.baseAddress, message.count, &out, &len)
        }
        guard ok != nil, Int(len) == digest.size else { throw OpenSSLError.make("HMAC") }
        return out
    }

    /// A fresh context per verification: for keys without a prepared `VerifyContext`.
    private static func evpVerify(
        _ alg: JWSAlgorithm, pkey: PKey, message: UnsafeBufferPointer<UInt8>,
        signature: UnsafeBufferPointer<UInt8>
    ) throws -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { throw OpenSSLError.make("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard VerifyContext.initialize(ctx, alg: alg, pkey: pkey) else {
            throw OpenSSLError.make(.keyMismatch, "the key cannot verify \(alg)")
        }
        let rc = EVP_DigestVerify(ctx, signature.baseAddress, signature.count, message.baseAddress, message.count)
        if rc != 1 { OpenSSLError.clear() }
        return rc == 1
    }

    private static func evpSign(_ alg: JWSAlgorithm, pkey: PKey, message: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw OpenSSLError.make("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestSignInit(ctx, &pctx, alg.digest?.md, nil, pkey.pointer) == 1, VerifyContext.configure(alg, pctx)
        else {
            throw OpenSSLError.make(.keyMismatch, "the key cannot sign \(alg)")
        }
        var len = 0
        guard EVP_DigestSign(ctx, nil, &len, message, message.count) == 1 else {
            throw OpenSSLError.make("EVP_DigestSign")
        }
        var out = [UInt8](repeating: 0, count: len)
        guard EVP_DigestSign(ctx, &out, &len, message, message.count) == 1 else {
            throw OpenSSLError.make("EVP_DigestSign")
        }
        return Array(out.prefix(len))
    }
}
