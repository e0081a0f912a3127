public import JOSE

/// A DPoP proof that passed RFC 9449 §4.3's checks.
public struct DPoPProof: Sendable {
    /// RFC 7638 thumbprint of the proof's key: what `cnf.jkt` must equal (§6.1).
    public let jkt: String
    public let jti: String
    public let iat: Int64
    public let nonce: String?
}

/// RFC 9449 §4.3 proof validation, as a policy value with an injected clock. Replay (jti)
/// and server nonces are the caller's (they need shared state); everything else is here.
public struct DPoPProofVerifier: Sendable {
    /// Asymmetric algorithms only (§4.3 check 5); the route's allow-list.
    public var algorithms: Set<JWSAlgorithm> = [.ES256, .ES384, .PS256, .RS256, .EdDSA]
    /// Accepted |now − iat|, seconds (§4.3 check 11; §11.1).
    public var window: Int64 = 60
    public var leeway: Int64 = 5
    public var maxSize = 8 * 1024

    public init() {}

    public struct Request: Sendable {
        public var method: String
        /// The request's target URI as the client addressed it (query and fragment ignored).
        public var uri: String
        /// The access token sent with the proof, if any (then `ath` is required, §4.3 check 12).
        public var accessToken: String?
        public var now: Int64
        public init(method: String, uri: String, accessToken: String?, now: Int64) {
            self.method = method; self.uri = uri; self.accessToken = accessToken; self.now = now
        }
    }

    public func verify(_ proof: String, request: Request) throws -> DPoPProof {
        let jws = try CompactJWS(proof, maxSize: maxSize)
        // Check 4: typ.
        guard let typ = jws.header.typ, JWSHeader.typesMatch(typ, "dpop+jwt") else {
            throw JOSEError(.typeMismatch, claim: "typ", "a DPoP proof must have typ dpop+jwt")
        }
        // Check 5: an asymmetric algorithm on the allow-list.
        guard !jws.header.alg.isSymmetric, algorithms.contains(jws.header.alg) else {
            throw JOSEError(.algorithmNotAllowed, claim: "alg", "\(jws.header.alg) is not allowed for DPoP proofs")
        }
        // Check 7: the jwk header is a public key (no private or symmetric members).
        guard let jwkObject = jws.header.object["jwk"]?.object else {
            throw JOSEError(.malformed, claim: "jwk", "a DPoP proof must carry its public key in jwk")
        }
        for member in ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] where jwkObject[member] != nil {
            throw JOSEError(.invalidKey, claim: "jwk", "the jwk header must not contain private key members")
        }
        let key = try JWK(object: jwkObject)
        // Check 6: the signature verifies with that key (RFC 9449's explicit rule for jwk).
        try JWSVerifier.verify(jws, embeddedKey: key, algorithms: algorithms)
        let claims = try jws.claims()
        // Check 3: required claims.
        guard let jti = claims["jti"]?.string, !jti.isEmpty else { throw JOSEError(.missingClaim, claim: "jti", "is required") }
        guard let htm = claims["htm"]?.string else { throw JOSEError(.missingClaim, claim: "htm", "is required") }
        guard let htu = claims["htu"]?.string else { throw JOSEError(.missingClaim, claim: "htu", "is required") }
        guard let iat = claims["iat"]?.int64 else { throw JOSEError(.missingClaim, claim: "iat", "is required") }
        // Check 8: method.
        guard htm == request.method else { throw JOSEError(.invalidClaim, claim: "htm", "does not match the request method") }
        // Check 9: URI without query and fragment, compared in normal form (§4.3, RFC 3986 §6).
        guard let want = HTU.normalize(request.uri), let got = HTU.normalize(htu), want == got else {
            throw JOSEError(.invalidClaim, claim: "htu", "does not match the request URI")
        }
        // Check 11: iat within the window.
        if iat > request.now + leeway + window || iat < request.now - leeway - window {
            throw JOSEError(.expired, claim: "iat", "the proof is outside the accepted time window")
        }
        // Check 12: ath binds the proof to the access token.
        if let token = request.accessToken {
            guard let ath = claims["ath"]?.string else { throw JOSEError(.missingClaim, claim: "ath", "is required with an access token") }
            let expected = Base64URL.encode(Digest.sha256.hash(Array(token.utf8)))
            guard ath.utf8.count == expected.utf8.count, ath == expected else {
                throw JOSEError(.invalidClaim, claim: "ath", "does not match the access token")
            }
        }
        return DPoPProof(jkt: key.thumbprint(), jti: jti, iat: iat, nonce: claims["nonce"]?.string)
    }
}

/// `htu` comparison form: scheme and host lowercased, default port dropped, query and
/// fragment removed, empty path as "/".
enum HTU {
    static func normalize(_ uri: String) -> String? {
        guard let sep = uri.firstRange(of: "://") else { return nil }
        let scheme = uri[..<sep.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        var rest = uri[sep.upperBound...]
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash].lowercased()
        if authority.contains("@") || authority.isEmpty { return nil }
        let path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        if (scheme == "https" && authority.hasSuffix(":443")) || (scheme == "http" && authority.hasSuffix(":80")) {
            authority = String(authority.dropLast(scheme == "https" ? 4 : 3))
        }
        return "\(scheme)://\(authority)\(path)"
    }
}
