internal import COpenSSL

/// A JSON Web Key (RFC 7517) with its OpenSSL key built once at parse time, so verifying
/// with it costs no key setup. Supported: RSA (≥ 2048 bits), EC P-256/P-384/P-521 (point
/// checked on the curve), OKP Ed25519, oct.
public struct JWK: Sendable {
    enum Material: Sendable {
        case asymmetric(PKey, isPrivate: Bool)
        case symmetric([UInt8])
    }

    public let kty: String
    public let kid: String?
    /// RFC 7517 §4.2: "sig" or "enc".
    public let use: String?
    /// RFC 7517 §4.3.
    public let keyOps: [String]?
    public let alg: String?
    /// EC/OKP curve.
    public let crv: String?
    let material: Material
    /// The public members as given (base64url text), for thumbprints and export.
    let publicMembers: [String: String]
    /// Verification contexts set up once, one per algorithm this key may verify (see
    /// `VerifyContext`); immutable, so a key shared by every worker thread stays read-only.
    let verifyContexts: [VerifyContext]

    public var isPrivate: Bool {
        switch material {
        case .asymmetric(_, let p): return p
        case .symmetric: return true
        }
    }

    /// Size in bits of the RSA modulus, EC field, or HMAC secret.
    public var bits: Int {
        switch material {
        case .asymmetric(let k, _): return k.bits
        case .symmetric(let s): return s.count * 8
        }
    }

    /// - verifying: the one algorithm to prepare a verification context for (a DPoP proof's
    ///   key verifies its proof's `alg` only); nil: every algorithm the key fits by type, curve
    ///   and `alg` member.
    init(
        kty: String, kid: String?, use: String?, keyOps: [String]?, alg: String?, crv: String?,
        material: Material, publicMembers: [String: String], verifying: JWSAlgorithm? = nil
    ) {
        self.kty = kty
        self.kid = kid
        self.use = use
        self.keyOps = keyOps
        self.alg = alg
        self.crv = crv
        self.material = material
        self.publicMembers = publicMembers
        var contexts: [VerifyContext] = []
        if case .asymmetric(let pkey, _) = material {
            let candidates = verifying.map { [$0] } ?? JWSAlgorithm.allCases
            for a in candidates
            where a.keyType == kty && (a.curve == nil || a.curve == crv) && (alg == nil || alg == a.rawValue) {
                if let c = VerifyContext(alg: a, pkey: pkey) { contexts.append(c) }
            }
        }
        verifyContexts = contexts
    }

    func verifyContext(for alg: JWSAlgorithm) -> VerifyContext? {
        for c in verifyContexts where c.alg == alg { return c }
        return nil
    }

    /// Whether this key may verify (or sign) `alg` by type, curve, size, `use`, `key_ops`
    /// and `alg` (RFC 7517 §4.2–4.4, RFC 7518 §3). Throws the reason it may not.
    /// - alsoNamed: another registry's name for `alg` that the key's `alg` member may hold
    ///   (an HTTP Message Signatures algorithm, RFC 9421 §6.2: `ed25519` for EdDSA).
    public func checkUsable(for alg: JWSAlgorithm, operation: String = "verify", alsoNamed: String? = nil) throws {
        guard kty == alg.keyType else { throw JOSEError(.keyMismatch, "\(alg) needs a \(alg.keyType) key, not \(kty)") }
        if let curve = alg.curve, crv != curve { throw JOSEError(.keyMismatch, "\(alg) needs curve \(curve)") }
        if let a = self.alg, a != alg.rawValue, a != alsoNamed {
            throw JOSEError(.keyMismatch, "the key is for \(a), not \(alg)")
        }
        if let use, use != "sig" { throw JOSEError(.keyMismatch, "the key's use is \(use), not sig") }
        if let ops = keyOps, !ops.contains(operation) {
            throw JOSEError(.keyMismatch, "the key's key_ops do not include \(operation)")
        }
        switch material {
        case .symmetric(let secret):
            // RFC 7518 §3.2: a key of the same size as the hash output or larger.
            if let d = alg.digest, secret.count < d.size {
                throw JOSEError(.weakKey, "\(alg) needs a key of at least \(d.size) bytes")
            }
        case .asymmetric(let k, _):
            if alg.keyType == "RSA" && k.bits < JWSAlgorithm.minimumRSABits {
                throw JOSEError(.weakKey, "RSA keys under 2048 bits are refused")
            }
        }
    }

    /// Verifies a raw signature over `message` (no JWS parsing): used by JWS and by tests
    /// that run raw signature vectors.
    public func verify(_ alg: JWSAlgorithm, message: [UInt8], signature: [UInt8], alsoNamed: String? = nil) throws
        -> Bool
    {
        try checkUsable(for: alg, alsoNamed: alsoNamed)
        return try message.withUnsafeBufferPointer {
            try SignatureEngine.verify(alg, key: self, message: $0, signature: signature)
        }
    }

    func verify(_ alg: JWSAlgorithm, message: UnsafeBufferPointer<UInt8>, signature: [UInt8]) throws -> Bool {
        try SignatureEngine.verify(alg, key: self, message: message, signature: signature)
    }

    public func sign(_ alg: JWSAlgorithm, message: [UInt8], alsoNamed: String? = nil) throws -> [UInt8] {
        try checkUsable(for: alg, operation: "sign", alsoNamed: alsoNamed)
        return try SignatureEngine.sign(alg, key: self, message: message)
    }
}
