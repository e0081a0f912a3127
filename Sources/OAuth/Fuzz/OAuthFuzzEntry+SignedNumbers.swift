import JOSE

extension OAuthFuzzEntry {
    /// The clock the entry judges at: a fixed instant, so a finding replays the same way.
    static let fuzzNow: Int64 = 1_780_000_000

    /// A credential's claims as a signer chose them (a JSON object): what no signed input may
    /// do is stop the process. They go through the claims policy every JWT meets (as a token
    /// and as a login's ID token), the step-up check as an admitted credential and as a stored
    /// session may hold them, an introspection answer and a token-exchange answer made of the
    /// same members. Invariants: nothing traps; what is admitted carries its dates inside
    /// `NumericDate.range`; an answer's lifetime ends within `NumericDate.longestLifetime`.
    public static func signedNumbers(_ text: String) {
        let bytes = Array(text.utf8)
        guard let claims = try? JSONParser.parseObject(bytes, what: "claims") else { return }
        let now = fuzzNow
        let token = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8)) + "." + Base64URL.encode(bytes) + ".AA"
        if let jws = try? CompactJWS(token) {
            for maxAge: Int64? in [nil, 300] {
                var policy = JWTClaimsPolicy(leeway: 30)
                policy.requireExpiry = false
                policy.maxAge = maxAge
                guard (try? policy.validate(header: jws.header, claims: claims, now: now)) != nil else { continue }
                for name in ["exp", "nbf", "iat", "auth_time"] {
                    guard let value = claims[name] else { continue }
                    fuzzInvariant(value.numericDate != nil, "numbers: an admitted \(name) outside the window")
                }
            }
        }
        // Stored sessions are not re-admitted: the step-up check judges whatever they hold.
        for maxAge in [1, 300, Int(Int32.max)] {
            var requirement = AuthorizationRequirement()
            requirement.acr = claims["acr"]?.string.map { [$0] } ?? []
            requirement.maxAge = maxAge
            for leeway: Int64 in [0, 30, 300] {
                _ = requirement.stepUpFailure(claims, now: now, leeway: leeway, maxAgeGrace: leeway)
            }
            _ = requirement.stepUpValidUntil(claims)
        }
        let issuer = IssuerPolicy(name: "one", issuer: "https://idp.one", algorithms: [.ES256], audiences: ["api"])
        var answer = claims
        answer["active"] = .bool(true)
        let introspected = Array(JSONSerializer.serialize(.object(answer)).utf8)
        if case .active(let t) = IntrospectionResponse.judge(introspected, issuer: issuer, now: now, defaultTTL: 60) {
            fuzzInvariant(
                NumericDate.range.contains(t.expiresAt), "numbers: an active answer's expiry outside the window")
        }
        answer["access_token"] = .string("fuzz-token")
        answer["issued_token_type"] = .string(TokenExchange.accessTokenType)
        answer["token_type"] = .string("Bearer")
        let exchanged = Array(JSONSerializer.serialize(.object(answer)).utf8)
        if case .success(let issued) = TokenExchange.parse(
            status: 200, body: exchanged, target: TokenExchange.Target(audiences: []), now: now),
            let at = issued.expiresAt
        {
            fuzzInvariant(
                at <= now + NumericDate.longestLifetime || claims["exp"]?.numericDate == at,
                "numbers: an exchanged token's expiry past the longest lifetime")
        }
        _ = TokenResponse.parse(status: 200, body: exchanged)
    }
}
