import JOSE

/// OAuth 2.0 Token Exchange (RFC 8693): the request a resource-side client makes at the
/// token endpoint to trade the token it was called with for one meant for the next hop,
/// and what the authorization server answers.
public enum TokenExchange {
    /// RFC 8693 §2.1 `grant_type`.
    public static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// RFC 8693 §3 token type identifiers.
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    public static let jwtTokenType = "urn:ietf:params:oauth:token-type:jwt"
    /// An Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-
    /// authz-grant §4.3): what the IdP issues for another AS, not an access token.
    public static let idJAGTokenType = "urn:ietf:params:oauth:token-type:id-jag"

    /// What the exchanged token must be good for (RFC 8693 §2.1): the `resource` URIs
    /// (RFC 8707), the logical `audience` names, and the `scope` asked for.
    public struct Target: Sendable, Hashable {
        public var audiences: [String]
        public var resources: [String]
        public var scope: String?
        public var requestedTokenType: String

        public init(
            audiences: [String] = [], resources: [String] = [], scope: String? = nil,
            requestedTokenType: String = TokenExchange.accessTokenType
        ) {
            self.audiences = audiences
            self.resources = resources
            self.scope = scope
            self.requestedTokenType = requestedTokenType
        }

        /// Every name the issued token's `aud` may carry to show it is for this target.
        public var names: [String] { resources + audiences }
    }

    /// The form parameters of the request (RFC 8693 §2.1), without client authentication.
    public static func form(subjectToken: String, subjectTokenType: String = accessTokenType, target: Target)
        -> [(String, String)]
    {
        var form: [(String, String)] = [
            ("grant_type", grantType), ("subject_token", subjectToken), ("subject_token_type", subjectTokenType),
            ("requested_token_type", target.requestedTokenType)
        ]
        for r in target.resources { form.append(("resource", r)) }
        for a in target.audiences { form.append(("audience", a)) }
        if let scope = target.scope { form.append(("scope", scope)) }
        return form
    }

    /// A successful response (RFC 8693 §2.2.1), checked against what was asked.
    public struct IssuedToken: Sendable, Equatable {
        public let token: String
        /// `token_type`: "Bearer" or "DPoP" (RFC 9449 §5), as the AS said.
        public let tokenType: String
        public let issuedTokenType: String
        /// When the token stops being good, in seconds since 1970: `expires_in` from `now`,
        /// or a JWT's own `exp` when that is sooner; nil when neither is known.
        public let expiresAt: Int64?
        public let scope: String?

        /// `token_type` is DPoP (case-insensitive, RFC 9449 §5): read per request, so kept.
        public let isDPoPBound: Bool

        init(token: String, tokenType: String, issuedTokenType: String, expiresAt: Int64?, scope: String?) {
            self.token = token
            self.tokenType = tokenType
            self.issuedTokenType = issuedTokenType
            self.expiresAt = expiresAt
            self.scope = scope
            isDPoPBound = tokenType.lowercased() == "dpop"
        }
    }

    /// Why a response is not a token the gateway may send on.
    public enum Failure: Error, Equatable, Sendable {
        /// The AS refused the exchange (RFC 8693 §2.2.2, RFC 6749 §5.2): its `error` code
        /// (`invalid_grant`, `invalid_target` …) and the status it answered with.
        case refused(error: String, status: Int)
        /// The AS answered 200 with something that is not a usable token for the target;
        /// the text says what, for the log.
        case unusable(String)
    }

    /// Reads the AS's answer. A JWT's `aud` must name the target (RFC 8693 §2.1: the AS
    /// "SHOULD" honour `resource` and `audience`, so the gateway checks it did); its `exp`
    /// bounds how long the token is kept. An opaque token is taken as issued for the target.
    /// `boundTo`: the thumbprint of the key whose DPoP proof went with the request (RFC 9449
    /// §5); a DPoP-bound answer is usable only then, and a JWT's `cnf.jkt` must name that key.
    /// `grantAnswer`: the answer to another grant (RFC 6749 §5.1: the jwt-bearer grant an
    /// ID-JAG is traded with), which says no `issued_token_type`.
    public static func parse(
        status: Int, body: [UInt8], target: Target, boundTo: String? = nil, now: Int64, grantAnswer: Bool = false
    )
        -> Result<IssuedToken, Failure>
    {
        let object = try? JSONParser.parseObject(body, what: "the token exchange response")
        guard status == 200 else {
            // RFC 6749 §5.2 codes are ASCII tokens; anything else is reported as unusable.
            let code = object?["error"]?.string.flatMap { isErrorCode($0) ? $0 : nil } ?? "invalid_response"
            return .failure(.refused(error: code, status: status))
        }
        guard let object else { return .failure(.unusable("the answer is not a JSON object")) }
        guard let token = object["access_token"]?.string, !token.isEmpty else {
            return .failure(.unusable("no access_token"))
        }
        // RFC 6750 §2.1: it goes upstream as `<type> <b64token>`; no other byte may ride along.
        guard BearerTokenExtractor.isB64Token(token) else {
            return .failure(.unusable("the access_token is not a b64token"))
        }
        let issuedType = object["issued_token_type"]?.string ?? (grantAnswer ? accessTokenType : nil)
        guard let issuedType else {
            return .failure(.unusable("no issued_token_type (RFC 8693 §2.2.1)"))
        }
        // RFC 8693 §2.2.1: the type of what was issued; it must be what was asked for.
        guard issuedType == (grantAnswer ? accessTokenType : target.requestedTokenType) else {
            return .failure(.unusable("issued_token_type \(issuedType.prefix(80)) is not the type asked for"))
        }
        // An ID-JAG is no access token: its token_type is N_A (the draft's §4.3.2), and it
        // goes to the AS it names, never upstream.
        let idJAG = !grantAnswer && target.requestedTokenType == idJAGTokenType
        guard let tokenType = object["token_type"]?.string,
            idJAG ? tokenType == "N_A" && jwtClaims(token) != nil : ["bearer", "dpop"].contains(tokenType.lowercased())
        else {
            // "N_A" (§2.2.1) is a token that is no access token: nothing to send upstream.
            return .failure(
                .unusable(idJAG ? "not an ID-JAG: token_type N_A and a JWT" : "token_type is not Bearer or DPoP"))
        }
        let dpop = tokenType.lowercased() == "dpop"
        if dpop && boundTo == nil {
            // No proof was sent, so the gateway holds no key such a token could be used with.
            return .failure(.unusable("token_type is DPoP, but no DPoP proof was sent"))
        }
        var expiresAt: Int64?
        if let seconds = object["expires_in"]?.int64 {
            guard seconds > 0 else { return .failure(.unusable("expires_in is not positive")) }
            expiresAt = now + min(seconds, NumericDate.longestLifetime)
        }
        if let claims = jwtClaims(token) {
            if !target.names.isEmpty {
                let aud = claims["aud"].map(audiences) ?? []
                guard aud.contains(where: { target.names.contains($0) }) else {
                    return .failure(.unusable("the issued token's aud does not name the target"))
                }
            }
            // RFC 9449 §6.1: a DPoP-bound JWT names its key; it must be the gateway's.
            if dpop, let jkt = claims["cnf"]?.object?["jkt"]?.string, jkt != boundTo {
                return .failure(.unusable("the issued token is bound to another key"))
            }
            if let said = claims["exp"] {
                guard let exp = said.numericDate else {
                    return .failure(.unusable("the issued token's exp is no date"))
                }
                guard exp > now else { return .failure(.unusable("the issued token has expired")) }
                expiresAt = min(expiresAt ?? exp, exp)
            }
        }
        return .success(
            IssuedToken(
                token: token, tokenType: tokenType, issuedTokenType: issuedType, expiresAt: expiresAt,
                scope: object["scope"]?.string))
    }

    /// The claims of a JWS-compact token, without checking its signature: the token came
    /// from the AS over the connection the gateway opened, so what is asked is whether it is
    /// for the target, not whether the AS made it. nil: not a JWT (an opaque token).
    static func jwtClaims(_ token: String) -> JSONObject? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])) else { return nil }
        return try? JSONParser.parseObject(payload, what: "the issued token's claims")
    }

    private static func audiences(_ value: JSONValue) -> [String] {
        switch value {
        case .string(let s): [s]
        case .array(let items): items.compactMap(\.string)
        default: []
        }
    }

    /// RFC 6749 §5.2: `error` is %x20-21 / %x23-5B / %x5D-7E.
    private static func isErrorCode(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x22 && $0 != 0x5C }
    }
}
