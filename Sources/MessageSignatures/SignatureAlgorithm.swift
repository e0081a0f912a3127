public import JOSE

/// An HTTP Message Signatures algorithm (RFC 9421 §3.3, the §6.2 registry). Each is one of
/// the JWS algorithms in its cryptography: the same curves, digests, padding and signature
/// encodings (ECDSA's `r‖s`, §3.3.4; RSASSA-PSS with MGF1 and a salt as long as the hash,
/// §3.3.1). A key may also name a JWS algorithm in its `alg` member (§3.3.7); such a key's
/// signatures carry no `alg` parameter.
public struct SignatureAlgorithm: Sendable, Hashable, CustomStringConvertible {
    /// How the signature is made and checked.
    public let jws: JWSAlgorithm
    /// The registry's name (`ed25519`), nil for a JWS algorithm the registry does not list.
    public let name: String?

    /// The six the registry defines, by name.
    public static let registered: [String: JWSAlgorithm] = [
        "rsa-pss-sha512": .PS512,
        "rsa-v1_5-sha256": .RS256,
        "hmac-sha256": .HS256,
        "ecdsa-p256-sha256": .ES256,
        "ecdsa-p384-sha384": .ES384,
        "ed25519": .EdDSA
    ]

    public init?(name: String) {
        guard let jws = Self.registered[name] else { return nil }
        self.jws = jws
        self.name = name
    }

    public init(jws: JWSAlgorithm) {
        self.jws = jws
        name = Self.registered.first { $0.value == jws }?.key
    }

    /// The algorithm `key` signs with, from the key alone (§3.2 step 5, §7.3.6: never from
    /// the message): its `alg` member when it has one (a registry name or a JWS name), else
    /// its type and curve. An RSA key without `alg` fits two algorithms; `rsa` says which.
    /// nil when the key says nothing usable.
    public static func of(_ key: JWK, rsa: SignatureAlgorithm = SignatureAlgorithm(jws: .PS512))
        -> SignatureAlgorithm?
    {
        if let alg = key.alg {
            if let named = SignatureAlgorithm(name: alg) { return named }
            return JWSAlgorithm(rawValue: alg).map(SignatureAlgorithm.init(jws:))
        }
        switch (key.kty, key.crv) {
        case ("EC", "P-256"): return SignatureAlgorithm(jws: .ES256)
        case ("EC", "P-384"): return SignatureAlgorithm(jws: .ES384)
        case ("OKP", "Ed25519"): return SignatureAlgorithm(jws: .EdDSA)
        case ("RSA", _): return rsa
        case ("oct", _): return SignatureAlgorithm(jws: .HS256)
        default: return nil
        }
    }

    public var isSymmetric: Bool { jws.isSymmetric }

    public var description: String { name ?? jws.rawValue }

    /// Verifies `signature` over `base` with `key`, which must fit this algorithm (type, curve,
    /// size, `use`, `key_ops`, `alg`).
    public func verify(_ signature: [UInt8], over base: [UInt8], with key: JWK) -> Bool {
        (try? key.verify(jws, message: base, signature: signature, alsoNamed: name)) ?? false
    }

    public func sign(_ base: [UInt8], with key: JWK) throws -> [UInt8] {
        try key.sign(jws, message: base, alsoNamed: name)
    }
}
