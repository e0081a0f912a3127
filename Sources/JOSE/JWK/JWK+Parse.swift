internal import COpenSSL

extension JWK {
    /// Parses one JWK from JSON text.
    public init(json: String) throws {
        guard case .object(let o) = try JSONParser.parse(json) else {
            throw JOSEError(.malformed, "a JWK must be a JSON object")
        }
        try self.init(object: o)
    }

    /// Parses one JWK (RFC 7517 §4, RFC 7518 §6, RFC 8037 §2).
    public init(object o: JSONObject) throws {
        try self.init(object: o, contextsFor: nil)
    }

    /// Parses one JWK that will verify `alg` only (a DPoP proof's own key): the same checks,
    /// but a verification context is prepared for that algorithm alone, not for every one the
    /// key could serve.
    public init(object o: JSONObject, verifying alg: JWSAlgorithm) throws {
        try self.init(object: o, contextsFor: alg)
    }

    private init(object o: JSONObject, contextsFor verifying: JWSAlgorithm?) throws {
        func str(_ name: String) throws -> String? {
            guard let v = o[name] else { return nil }
            guard let s = v.string else { throw JOSEError(.invalidKey, claim: name, "must be a string") }
            return s
        }
        func b64(_ name: String, required: Bool = true) throws -> [UInt8]? {
            guard let s = try str(name) else {
                if required { throw JOSEError(.invalidKey, claim: name, "is required") }
                return nil
            }
            guard let bytes = Base64URL.decode(s), !bytes.isEmpty else {
                throw JOSEError(.invalidKey, claim: name, "is not canonical base64url")
            }
            return bytes
        }
        guard let kty = try str("kty") else { throw JOSEError(.invalidKey, claim: "kty", "is required") }
        let use = try str("use")
        // RFC 7517 §4.2 allows other `use` values; only "sig" keys ever verify (checkUsable).
        var keyOps: [String]?
        if let ops = o["key_ops"] {
            guard let arr = ops.array else { throw JOSEError(.invalidKey, claim: "key_ops", "must be an array") }
            let names = try arr.map { v -> String in
                guard let s = v.string else { throw JOSEError(.invalidKey, claim: "key_ops", "must hold strings") }
                return s
            }
            if Set(names).count != names.count { throw JOSEError(.invalidKey, claim: "key_ops", "has duplicates") }
            keyOps = names
        }
        let kid = try str("kid")
        let alg = try str("alg")
        let crv = try str("crv")
        if let alg, JWSAlgorithm(rawValue: alg) == nil, use != "enc", alg.lowercased() == "none" {
            throw JOSEError(.invalidKey, claim: "alg", "none is not a key algorithm")
        }
        var members: [String: String] = ["kty": kty]
        let material: Material
        switch kty {
        case "RSA":
            let n = try b64("n")!
            let e = try b64("e")!
            if n.first == 0 || e.first == 0 { throw JOSEError(.invalidKey, claim: "n", "has leading zero octets") }
            try RSAKeyPolicy.checkExponent(e)
            members["n"] = try str("n")
            members["e"] = try str("e")
            if o["oth"] != nil { throw JOSEError(.invalidKey, claim: "oth", "multi-prime RSA keys are not supported") }
            let d = try b64("d", required: false)
            let names = ["p", "q", "dp", "dq", "qi"]
            let crt = try names.map { try b64($0, required: false) }
            if d == nil && crt.contains(where: { $0 != nil }) {
                throw JOSEError(.invalidKey, claim: "d", "is required with p, q, dp, dq, qi")
            }
            if d != nil && crt.contains(where: { $0 == nil }) {
                throw JOSEError(.invalidKey, "a private RSA key needs d, p, q, dp, dq and qi")
            }
            let key = try PKey.fromData(
                type: "RSA", selection: d == nil ? KeySelection.publicKey : KeySelection.keyPair
            ) { b in
                try b.bn("n", n)
                try b.bn("e", e)
                if let d {
                    try b.bn("d", d)
                    for (param, value) in zip(
                        ["rsa-factor1", "rsa-factor2", "rsa-exponent1", "rsa-exponent2", "rsa-coefficient1"], crt)
                    {
                        try b.bn(param, value!)
                    }
                }
            }
            if key.bits < JWSAlgorithm.minimumRSABits {
                throw JOSEError(.weakKey, "RSA keys under 2048 bits are refused (\(key.bits))")
            }
            try RSAKeyPolicy.checkNotROCA(modulus: n)
            if d != nil { try key.checkPair() }
            material = .asymmetric(key, isPrivate: d != nil)
        case "EC":
            guard let crv, let curve = ECCurve(jwkName: crv) else {
                throw JOSEError(.invalidKey, claim: "crv", "must be P-256, P-384 or P-521")
            }
            let x = try b64("x")!
            let y = try b64("y")!
            // RFC 7518 §6.2.1.2: the full coordinate size, leading zeros included.
            guard x.count == curve.size, y.count == curve.size else {
                throw JOSEError(.invalidKey, claim: "x", "coordinates must be \(curve.size) bytes")
            }
            let d = try b64("d", required: false)
            if let d, d.count != curve.size { throw JOSEError(.invalidKey, claim: "d", "must be \(curve.size) bytes") }
            members["crv"] = crv
            members["x"] = try str("x")
            members["y"] = try str("y")
            let key: PKey
            if d == nil, let factory = curve.publicKeys {
                key = try factory.publicKey(point: [0x04] + x + y)
            } else {
                key = try PKey.fromData(type: "EC", selection: d == nil ? KeySelection.publicKey : KeySelection.keyPair)
                { b in
                    try b.utf8("group", curve.openSSLName)
                    try b.octets("pub", [0x04] + x + y)
                    if let d { try b.bn("priv", d) }
                }
            }
            // P-256/384/521 have cofactor 1: in range and on the curve is enough.
            try key.checkPublic(quick: true)
            if d != nil { try key.checkPair() }
            material = .asymmetric(key, isPrivate: d != nil)
        case "OKP":
            guard crv == "Ed25519" else { throw JOSEError(.invalidKey, claim: "crv", "only Ed25519 is supported") }
            let x = try b64("x")!
            guard x.count == 32 else { throw JOSEError(.invalidKey, claim: "x", "must be 32 bytes") }
            members["crv"] = crv
            members["x"] = try str("x")
            let pkey: OpaquePointer?
            if let d = try b64("d", required: false) {
                guard d.count == 32 else { throw JOSEError(.invalidKey, claim: "d", "must be 32 bytes") }
                pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, d, 32)
                guard let pkey else { throw OpenSSLError.make(.invalidKey, "Ed25519 private key") }
                var pub = [UInt8](repeating: 0, count: 32)
                var len = 32
                guard EVP_PKEY_get_raw_public_key(pkey, &pub, &len) == 1, CRYPTO_memcmp(pub, x, 32) == 0 else {
                    EVP_PKEY_free(pkey)
                    throw JOSEError(.invalidKey, claim: "x", "does not match d")
                }
                material = .asymmetric(PKey(taking: pkey), isPrivate: true)
            } else {
                pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, x, 32)
                guard let pkey else { throw OpenSSLError.make(.invalidKey, "Ed25519 public key") }
                material = .asymmetric(PKey(taking: pkey), isPrivate: false)
            }
        case "oct":
            let k = try b64("k")!
            material = .symmetric(k)
        default:
            throw JOSEError(.invalidKey, claim: "kty", "unsupported key type \(kty)")
        }
        self.init(
            kty: kty, kid: kid, use: use, keyOps: keyOps, alg: alg, crv: crv, material: material,
            publicMembers: members,
            verifying: verifying)
    }
}

/// The NIST curves JOSE uses (RFC 7518 §6.2.1.1).
struct ECCurve {
    let jwkName: String
    let openSSLName: String
    let size: Int

    /// Makes this curve's public keys; nil if OpenSSL could not build the curve's template
    /// (keys are then built with `EVP_PKEY_fromdata`).
    var publicKeys: ECPublicKeyFactory? {
        switch jwkName {
        case "P-256": ECCurve.p256
        case "P-384": ECCurve.p384
        default: ECCurve.p521
        }
    }
    // Built once per process, on first use (Swift's lazy globals are thread-safe).
    private static let p256 = try? ECPublicKeyFactory(openSSLName: "prime256v1")
    private static let p384 = try? ECPublicKeyFactory(openSSLName: "secp384r1")
    private static let p521 = try? ECPublicKeyFactory(openSSLName: "secp521r1")

    init?(jwkName: String) {
        switch jwkName {
        case "P-256":
            self.jwkName = jwkName
            openSSLName = "prime256v1"
            size = 32
        case "P-384":
            self.jwkName = jwkName
            openSSLName = "secp384r1"
            size = 48
        case "P-521":
            self.jwkName = jwkName
            openSSLName = "secp521r1"
            size = 66
        default: return nil
        }
    }

    init?(openSSLName: String) {
        switch openSSLName {
        case "prime256v1", "P-256": self.init(jwkName: "P-256")
        case "secp384r1", "P-384": self.init(jwkName: "P-384")
        case "secp521r1", "P-521": self.init(jwkName: "P-521")
        default: return nil
        }
    }
}
