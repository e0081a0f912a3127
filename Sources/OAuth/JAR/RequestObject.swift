public import JOSE

/// The parameters of an OAuth 2.0 authorization request (RFC 6749 §4.1.1) as the gateway
/// sends them for a login: code flow, PKCE S256 (RFC 7636), OIDC `nonce`.
public struct AuthorizationParameters: Sendable {
    public var clientID: String
    public var redirectURI: String
    public var scope: [String]
    public var state: String
    public var nonce: String
    public var codeChallenge: String
    /// Extra parameters (prompt, acr_values, audience, resource, ui_locales, login_hint …).
    public var extra: [(String, String)] = []
    /// `acr_values` (OIDC Core §3.1.2.1): the authentication context classes asked for, in
    /// order of preference. Empty: none asked (an `acr_values` of `extra` then goes as it is).
    public private(set) var acrValues: [String] = []
    /// `max_age` (OIDC Core §3.1.2.1): the most seconds since the user last authenticated
    /// actively; past it the AS "MUST attempt to actively re-authenticate". nil: not asked.
    public private(set) var maxAge: Int? = nil

    public init(
        clientID: String, redirectURI: String, scope: [String], state: String, nonce: String, codeChallenge: String,
        extra: [(String, String)] = []
    ) {
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.scope = scope
        self.state = state
        self.nonce = nonce
        self.codeChallenge = codeChallenge
        self.extra = extra
    }

    /// Asks for a level (`acr_values`) and a freshness (`max_age`) of authentication — a
    /// step-up (RFC 9470 §4): each replaces the same parameter of `extra` (a client's fixed
    /// `acr_values` is not what this login needs).
    public mutating func askAuthentication(acrValues: [String], maxAge: Int?) {
        if !acrValues.isEmpty {
            self.acrValues = acrValues
            extra.removeAll { $0.0 == "acr_values" }
        }
        if let maxAge {
            self.maxAge = maxAge
            extra.removeAll { $0.0 == "max_age" }
        }
    }

    /// As query or form parameters, in a stable order.
    public var pairs: [(String, String)] {
        var all = [
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI),
            ("scope", scope.joined(separator: " ")),
            ("state", state), ("nonce", nonce), ("code_challenge", codeChallenge), ("code_challenge_method", "S256")
        ]
        if !acrValues.isEmpty { all.append(("acr_values", acrValues.joined(separator: " "))) }
        if let maxAge { all.append(("max_age", String(maxAge))) }
        return all + extra
    }
}

/// A signed request object (RFC 9101 JAR): the authorization request's parameters as JWT
/// claims, signed with the client's key, so the AS knows they came from the client and were
/// not changed in the browser.
public enum RequestObject {
    /// RFC 9101 §10.8: the media type of request objects.
    public static let type = "oauth-authz-req+jwt"
    public static let lifetime: Int64 = 60

    /// Header: `alg`, `typ: oauth-authz-req+jwt`, `kid`. Claims: `iss` = client_id, `aud` =
    /// the AS's issuer (§4), the request parameters, `iat`, `nbf`, `exp` (short), `jti` (≤ 64
    /// bytes: 32 random bytes, base64url).
    public static func sign(_ p: AuthorizationParameters, audience: String, key: JWK, alg: JWSAlgorithm, now: Int64)
        throws -> String
    {
        var claims = JSONObject()
        claims["iss"] = .string(p.clientID)
        claims["aud"] = .string(audience)
        // OIDC Core §3.1.2.1: max_age is a number of seconds (a JSON number in the object).
        if let maxAge = p.maxAge { claims["max_age"] = .number(String(maxAge)) }
        for (name, value) in p.pairs where claims[name] == nil { claims[name] = .string(value) }
        claims["iat"] = .number(String(now))
        claims["nbf"] = .number(String(now))
        claims["exp"] = .number(String(now + lifetime))
        claims["jti"] = .string(Base64URL.encode(SecureRandom.bytes(32)))
        var header = JSONObject()
        header["typ"] = .string(type)
        if let kid = key.kid { header["kid"] = .string(kid) }
        return try JWSSigner.sign(claims: claims, header: header, alg: alg, key: key)
    }
}
