public import JOSE

/// Makes DPoP proofs (RFC 9449 §4.2) with a client's private key: header `typ: dpop+jwt`,
/// `alg`, and the public `jwk`; claims `jti` (128 random bits), `htm`, `htu` (without query
/// and fragment), `iat`, and `ath` / `nonce` when given. For the gateway as a client (DPoP at
/// a token endpoint) and for the `tokengate dpop proof` tool.
public struct DPoPProofSigner: Sendable {
    public let key: JWK
    public let alg: JWSAlgorithm
    private let header: JSONObject

    public init(key: JWK, alg: JWSAlgorithm) throws {
        guard !alg.isSymmetric else { throw JOSEError(.keyMismatch, "DPoP proofs need an asymmetric key") }
        guard key.isPrivate else { throw JOSEError(.invalidKey, "signing DPoP proofs needs the private key") }
        try key.checkUsable(for: alg, operation: "sign")
        // A proof names its key by value (jwk), never by kid: the signer would otherwise add
        // the key's kid to the header, and a verifier could look for a key by that name.
        var unnamed = try key.privateJWK()
        unnamed["kid"] = nil
        self.key = try JWK(object: unnamed)
        self.alg = alg
        var h = JSONObject()
        h["typ"] = .string("dpop+jwt")
        h["jwk"] = .object(self.key.publicJWK())
        header = h
    }

    /// RFC 7638 thumbprint of the key: the `cnf.jkt` that tokens bound to it carry.
    public var jkt: String { key.thumbprint() }

    public func proof(method: String, url: String, accessToken: String? = nil, nonce: String? = nil, now: Int64) throws
        -> String
    {
        var htu = Substring(url)
        if let cut = htu.firstIndex(where: { $0 == "?" || $0 == "#" }) { htu = htu[..<cut] }
        var claims = JSONObject()
        claims["jti"] = .string(Base64URL.encode(SecureRandom.bytes(16)))
        claims["htm"] = .string(method)
        claims["htu"] = .string(String(htu))
        claims["iat"] = .number(String(now))
        if let accessToken { claims["ath"] = .string(Base64URL.encode(Digest.sha256.hash(Array(accessToken.utf8)))) }
        if let nonce { claims["nonce"] = .string(nonce) }
        return try JWSSigner.sign(claims: claims, header: header, alg: alg, key: key)
    }
}
