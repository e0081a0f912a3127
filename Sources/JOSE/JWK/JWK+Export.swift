internal import COpenSSL

extension JWK {
    /// The public JWK (RFC 7517): key members plus kid/use/key_ops/alg; never private parts.
    /// A symmetric key has no public form; its result carries only the metadata.
    public func publicJWK() -> JSONObject {
        var o = JSONObject()
        o["kty"] = .string(kty)
        for name in ["crv", "n", "e", "x", "y"] { if let v = publicMembers[name] { o[name] = .string(v) } }
        if let kid { o["kid"] = .string(kid) }
        if let use { o["use"] = .string(use) }
        if let keyOps { o["key_ops"] = .array(keyOps.map { .string($0) }) }
        if let alg { o["alg"] = .string(alg) }
        return o
    }

    /// The full JWK including private members (for `tokengate keys generate`).
    public func privateJWK() throws -> JSONObject {
        var o = publicJWK()
        switch material {
        case .symmetric(let k):
            o["k"] = .string(Base64URL.encode(k))
        case .asymmetric(let pkey, let isPrivate):
            guard isPrivate else { return o }
            switch kty {
            case "RSA":
                for (member, param) in [
                    ("d", "d"), ("p", "rsa-factor1"), ("q", "rsa-factor2"), ("dp", "rsa-exponent1"),
                    ("dq", "rsa-exponent2"), ("qi", "rsa-coefficient1")
                ] {
                    guard let v = pkey.bnParam(param) else { throw OpenSSLError.make("RSA \(param)") }
                    o[member] = .string(Base64URL.encode(v))
                }
            case "EC":
                guard let curve = crv.flatMap(ECCurve.init(jwkName:)), let d = pkey.bnParam("priv", size: curve.size)
                else {
                    throw OpenSSLError.make("EC private key")
                }
                o["d"] = .string(Base64URL.encode(d))
            default:
                var d = [UInt8](repeating: 0, count: 32)
                var len = 32
                guard EVP_PKEY_get_raw_private_key(pkey.pointer, &d, &len) == 1 else {
                    throw OpenSSLError.make("Ed25519 private key")
                }
                o["d"] = .string(Base64URL.encode(d.prefix(len)))
            }
        }
        return o
    }

    /// Wraps an OpenSSL key (from PEM or generation) as a JWK.
    init(pkey: PKey, isPrivate: Bool, kid: String?, alg: String?, use: String? = "sig") throws {
        var members: [String: String] = [:]
        let kty: String
        var crv: String?
        switch EVP_PKEY_get_base_id(pkey.pointer) {
        case EVP_PKEY_RSA:
            kty = "RSA"
            guard let n = pkey.bnParam("n"), let e = pkey.bnParam("e") else {
                throw OpenSSLError.make("RSA public key")
            }
            members["n"] = Base64URL.encode(n)
            members["e"] = Base64URL.encode(e)
            if pkey.bits < JWSAlgorithm.minimumRSABits {
                throw JOSEError(.weakKey, "RSA keys under 2048 bits are refused")
            }
        case EVP_PKEY_EC:
            kty = "EC"
            var name = [CChar](repeating: 0, count: 64)
            var len = 0
            guard EVP_PKEY_get_utf8_string_param(pkey.pointer, "group", &name, name.count, &len) == 1,
                let curve = ECCurve(openSSLName: name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }),
                let x = pkey.bnParam("qx", size: curve.size), let y = pkey.bnParam("qy", size: curve.size)
            else {
                throw JOSEError(.invalidKey, "unsupported EC curve")
            }
            crv = curve.jwkName
            members["x"] = Base64URL.encode(x)
            members["y"] = Base64URL.encode(y)
        case EVP_PKEY_ED25519:
            kty = "OKP"
            crv = "Ed25519"
            var x = [UInt8](repeating: 0, count: 32)
            var len = 32
            guard EVP_PKEY_get_raw_public_key(pkey.pointer, &x, &len) == 1 else {
                throw OpenSSLError.make("Ed25519 public key")
            }
            members["x"] = Base64URL.encode(x)
        default:
            throw JOSEError(.invalidKey, "unsupported key type (RSA, EC P-256/384/521 and Ed25519 are supported)")
        }
        members["kty"] = kty
        if let crv { members["crv"] = crv }
        self.init(
            kty: kty, kid: kid, use: use, keyOps: nil, alg: alg, crv: crv,
            material: .asymmetric(pkey, isPrivate: isPrivate), publicMembers: members)
    }

    /// Imports a PEM private key (PKCS#8 or traditional) or public key (SPKI).
    public init(pem: String, kid: String? = nil, alg: String? = nil) throws {
        let bytes = Array(pem.utf8)
        func bio() throws -> OpaquePointer {
            guard let b = BIO_new_mem_buf(bytes, Int32(bytes.count)) else { throw OpenSSLError.make("BIO_new_mem_buf") }
            return b
        }
        let first = try bio()
        defer { BIO_free(first) }
        if let key = PEM_read_bio_PrivateKey(first, nil, nil, nil) {
            try self.init(pkey: PKey(taking: key), isPrivate: true, kid: kid, alg: alg)
            return
        }
        OpenSSLError.clear()
        let second = try bio()
        defer { BIO_free(second) }
        guard let key = PEM_read_bio_PUBKEY(second, nil, nil, nil) else {
            throw OpenSSLError.make(.invalidKey, "not a PEM private or public key")
        }
        try self.init(pkey: PKey(taking: key), isPrivate: false, kid: kid, alg: alg)
    }

    /// A new private key for `alg` (RS256/PS256: RSA 2048 — or `rsaBits`; ES256/384/512:
    /// the matching curve; EdDSA: Ed25519).
    public static func generate(for alg: JWSAlgorithm, kid: String?, rsaBits: Int = 2048) throws -> JWK {
        let type: String
        switch alg.family {
        case .rsaPKCS1, .rsaPSS: type = "RSA"
        case .ecdsa: type = "EC"
        case .eddsa: type = "ED25519"
        case .hmac:
            return JWK(
                kty: "oct", kid: kid, use: "sig", keyOps: nil, alg: alg.rawValue, crv: nil,
                material: .symmetric(SecureRandom.bytes(alg.digest!.size)), publicMembers: ["kty": "oct"])
        }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw OpenSSLError.make("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1 else { throw OpenSSLError.make("keygen init") }
        if type == "RSA" {
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(max(rsaBits, 2048))) == 1 else {
                throw OpenSSLError.make("RSA bits")
            }
        }
        if type == "EC", let curve = alg.curve.flatMap(ECCurve.init(jwkName:)) {
            guard EVP_PKEY_CTX_set_group_name(ctx, curve.openSSLName) == 1 else { throw OpenSSLError.make("EC group") }
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else { throw OpenSSLError.make("key generation") }
        return try JWK(pkey: PKey(taking: key), isPrivate: true, kid: kid, alg: alg.rawValue)
    }
}
