import JOSE

/// RFC 7662 §2.2: an introspection response, judged for one resource server.
public enum IntrospectionResponse {
    public enum Verdict: Sendable {
        case active(VerifiedAccessToken)
        case inactive(reason: String)
    }

    /// Whether `body` is an introspection response at all: §2.2 "a JSON object" whose
    /// `active` member is a boolean. Anything else (a proxy's HTML page, a truncated or empty
    /// body) says nothing about the token, so it is no verdict: the caller treats it as the
    /// endpoint failing, not as `active: false`.
    public static func isResponse(_ body: [UInt8]) -> Bool {
        guard let obj = try? JSONParser.parse(body).object, case .bool = obj["active"] else { return false }
        return true
    }

    /// `active: true` is required; `exp`, `nbf` are honoured with leeway; `aud`, when
    /// present, must name one of `audiences`; `iss`, when present, must be the issuer.
    public static func judge(_ body: [UInt8], issuer: IssuerPolicy, now: Int64, defaultTTL: Int64) -> Verdict {
        guard let obj = try? JSONParser.parse(body).object else {
            return .inactive(reason: "the response is not a JSON object")
        }
        guard obj["active"] == .bool(true) else { return .inactive(reason: "active is not true") }
        // RFC 7662 §2.2: NumericDates, admitted only within `NumericDate.range` as a JWT's are
        // (a step-up check or a session may do arithmetic on them later).
        for name in ["exp", "nbf", "iat", "auth_time"] where obj[name] != nil && obj[name]?.numericDate == nil {
            return .inactive(reason: "\(name) is not a date a token may carry")
        }
        if let exp = obj["exp"]?.numericDate, now - issuer.leeway >= exp { return .inactive(reason: "expired") }
        if let nbf = obj["nbf"]?.numericDate, now + issuer.leeway < nbf { return .inactive(reason: "not valid yet") }
        if let iss = obj["iss"] {
            guard iss.string == issuer.issuer else { return .inactive(reason: "issuer mismatch") }
        }
        if let aud = obj["aud"] {
            let values: [String] = aud.string.map { [$0] } ?? (aud.array?.compactMap(\.string) ?? [])
            guard values.contains(where: issuer.audiences.contains) else {
                return .inactive(reason: "audience mismatch")
            }
        }
        let expires = obj["exp"]?.numericDate ?? now + defaultTTL
        var token = VerifiedAccessToken(issuer: issuer.name, claims: obj, expiresAt: expires, confirmation: obj["cnf"])
        token.scopeClaim = issuer.scopeClaim
        token.scopeImplication = issuer.scopeImplication
        return .active(token)
    }
}
