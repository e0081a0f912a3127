extension JWK {
    /// RFC 7638 JWK thumbprint: SHA-256 over the required members only, in lexicographic
    /// order, no whitespace (§3.2–3.3), base64url-encoded.
    public func thumbprint() -> String {
        let required: [String]
        switch kty {
        case "RSA": required = ["e", "kty", "n"]
        case "EC": required = ["crv", "kty", "x", "y"]
        case "OKP": required = ["crv", "kty", "x"]
        default: required = ["k", "kty"]
        }
        var o = JSONObject()
        for name in required {
            if name == "k", case .symmetric(let k) = material { o[name] = .string(Base64URL.encode(k)); continue }
            o[name] = .string(publicMembers[name] ?? "")
        }
        return Base64URL.encode(Digest.sha256.hash(Array(JSONSerializer.serialize(.object(o)).utf8)))
    }
}
