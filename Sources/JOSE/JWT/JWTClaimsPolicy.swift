/// The one claims policy every JWT goes through (RFC 7519 §4.1, RFC 8725 §3): a value, set
/// up once per issuer or use, applied with an injected clock. Nothing in it is opt-in by the
/// caller at verification time.
public struct JWTClaimsPolicy: Sendable {
    /// `iss` must equal this (RFC 7519 §4.1.1), compared exactly.
    public var issuer: String?
    /// `aud` (string or array) must contain one of these (§4.1.3). Empty: `aud` unchecked —
    /// only for token kinds whose audience another rule fixes.
    public var audiences: [String] = []
    /// Allowed clock skew, seconds, for exp/nbf/iat.
    public var leeway: Int64 = 30
    /// `exp` must be present (RFC 9068 §2.2 for access tokens).
    public var requireExpiry = true
    /// `iat` must not be older than this (DPoP proofs, request objects), if set.
    public var maxAge: Int64?
    public var requiredClaims: [String] = []
    /// The header `typ` must match (e.g. "at+jwt", "dpop+jwt"), if set (RFC 8725 §3.11).
    public var type: String?

    public init(issuer: String? = nil, audiences: [String] = [], leeway: Int64 = 30, type: String? = nil) {
        self.issuer = issuer
        self.audiences = audiences
        self.leeway = leeway
        self.type = type
    }

    public func validate(header: JWSHeader, claims: JSONObject, now: Int64) throws {
        if let type {
            guard let typ = header.typ else {
                throw JOSEError(.typeMismatch, claim: "typ", "the header has no typ; expected \(type)")
            }
            guard JWSHeader.typesMatch(typ, type) else {
                throw JOSEError(.typeMismatch, claim: "typ", "\"\(typ)\" is not \(type)")
            }
        }
        for name in requiredClaims where claims[name] == nil {
            throw JOSEError(.missingClaim, claim: name, "is required")
        }
        let exp = try date(claims, Names.exp)
        let nbf = try date(claims, Names.nbf)
        let iat = try date(claims, Names.iat)
        // OIDC Core §2: a NumericDate too. Checked here, where every JWT is admitted, so a
        // session or a step-up check never holds one outside the window.
        _ = try date(claims, Names.authTime)
        if let exp {
            if now - leeway >= exp { throw JOSEError(.expired, claim: "exp", "the token expired") }
        } else if requireExpiry {
            throw JOSEError(.missingClaim, claim: "exp", "is required")
        }
        if let nbf, now + leeway < nbf { throw JOSEError(.notYetValid, claim: "nbf", "the token is not valid yet") }
        if let iat, now + leeway < iat {
            throw JOSEError(.issuedInFuture, claim: "iat", "the token was issued in the future")
        }
        if let maxAge {
            guard let iat else { throw JOSEError(.missingClaim, claim: "iat", "is required") }
            if now - leeway > iat + maxAge { throw JOSEError(.expired, claim: "iat", "the token is too old") }
        }
        if let issuer {
            guard let value = claims[Names.iss] else { throw JOSEError(.missingClaim, claim: "iss", "is required") }
            guard value.string == issuer else { throw JOSEError(.issuerMismatch, claim: "iss", "unexpected issuer") }
        }
        if !audiences.isEmpty {
            guard let aud = claims[Names.aud] else { throw JOSEError(.missingClaim, claim: "aud", "is required") }
            let accepted: Bool
            switch aud {
            // A single audience (the common case) is compared without building an array.
            case .string(let s): accepted = audiences.contains(s)
            case .array(let a):
                for v in a where v.string == nil {
                    throw JOSEError(.invalidClaim, claim: "aud", "must hold strings")
                }
                accepted = a.contains { audiences.contains($0.string!) }
            default: throw JOSEError(.invalidClaim, claim: "aud", "must be a string or an array of strings")
            }
            guard accepted else { throw JOSEError(.audienceMismatch, claim: "aud", "no accepted audience") }
        }
    }

    /// A NumericDate claim (RFC 7519 §2) within `NumericDate.range`, or nil when absent.
    private func date(_ claims: JSONObject, _ name: JSONObject.Name) throws -> Int64? {
        guard let v = claims[name] else { return nil }
        guard let d = v.int64 else { throw JOSEError(.invalidClaim, claim: name.text, "must be a NumericDate") }
        guard NumericDate.admits(d) else {
            throw JOSEError(.invalidClaim, claim: name.text, "is outside the dates a credential may carry")
        }
        return d
    }

    /// The registered claims it reads, prepared for lookups once.
    private enum Names {
        static let exp = JSONObject.Name("exp")
        static let nbf = JSONObject.Name("nbf")
        static let iat = JSONObject.Name("iat")
        static let authTime = JSONObject.Name("auth_time")
        static let iss = JSONObject.Name("iss")
        static let aud = JSONObject.Name("aud")
    }
}
