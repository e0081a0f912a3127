import Testing

@testable import JOSE

/// Claims an attacker controls once a signature verifies — or replays from another context:
/// expired or not-yet-valid tokens at the exact leeway boundary, another issuer, another
/// audience, another token type, and claims of the wrong JSON type (RFC 7519 §4.1,
/// RFC 8725 §3.8–3.11). Every token here is validly signed; only the named claim is wrong.
@Suite("Attacks through JWT claims and typ, with a fixed clock")
struct AttackClaimsTests {
    static let now = Attack.now
    static let leeway: Int64 = 30

    static func policy(type: String? = nil, maxAge: Int64? = nil, required: [String] = []) -> JWTClaimsPolicy {
        var p = JWTClaimsPolicy(issuer: "https://idp.example", audiences: ["api", "api2"], leeway: leeway, type: type)
        p.maxAge = maxAge
        p.requiredClaims = required
        return p
    }

    /// Valid claims with `overrides` applied (`nil` removes a claim); raw JSON values.
    static func claims(_ overrides: [String: String?] = [:]) -> String {
        var members: [(String, String)] = [
            ("iss", #""https://idp.example""#), ("aud", #""api""#), ("sub", #""alice""#),
            ("exp", String(now + 600)), ("iat", String(now - 10))
        ]
        for (name, value) in overrides.sorted(by: { $0.key < $1.key }) {
            members.removeAll { $0.0 == name }
            if let value { members.append((name, value)) }
        }
        return "{" + members.map { #""\#($0.0)":\#($0.1)"# }.joined(separator: ",") + "}"
    }

    static func verify(_ claims: String, typ: String? = "at+jwt", policy: JWTClaimsPolicy = policy()) throws {
        let typMember = typ.map { #","typ":\#($0.hasPrefix("#") ? String($0.dropFirst()) : #""\#($0)""#)"# } ?? ""
        let token = try Attack.forge(
            header: #"{"alg":"ES256","kid":"ES256"\#(typMember)}"#, payload: claims, alg: .ES256,
            key: Attack.key(.ES256))
        _ = try JWTVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: policy).verify(
            token, now: now)
    }

    /// (claim, value relative to now, expected code or nil for accepted).
    static let timeEdges: [(String, Int64, JOSEError.Code?)] = [
        // exp: valid while now - leeway < exp (RFC 7519 §4.1.4 "on or after … MUST NOT be accepted").
        ("exp", -leeway, .expired), ("exp", -leeway + 1, nil), ("exp", -leeway - 1, .expired), ("exp", 0, nil),
        // nbf: valid once now + leeway ≥ nbf (§4.1.5 "before … MUST NOT be accepted").
        ("nbf", leeway, nil), ("nbf", leeway + 1, .notYetValid), ("nbf", 0, nil),
        // iat in the future beyond the leeway.
        ("iat", leeway, nil), ("iat", leeway + 1, .issuedInFuture)
    ]

    @Test("exp, nbf and iat exactly at the leeway boundary", arguments: timeEdges)
    func timeBoundaries(_ claim: String, _ offset: Int64, _ expected: JOSEError.Code?) throws {
        let c = Self.claims([claim: String(Self.now + offset)])
        if let expected {
            let e = expectJOSEError(expected) { try Self.verify(c) }
            #expect(e?.claim == claim)
        } else {
            try Self.verify(c)
        }
    }

    @Test("with no leeway, exp = now is expired and nbf = now is valid")
    func zeroLeeway() throws {
        var p = Self.policy()
        p.leeway = 0
        expectJOSEError(.expired) { try Self.verify(Self.claims(["exp": String(Self.now)]), policy: p) }
        try Self.verify(Self.claims(["exp": String(Self.now + 1)]), policy: p)
        try Self.verify(Self.claims(["nbf": String(Self.now)]), policy: p)
        expectJOSEError(.notYetValid) { try Self.verify(Self.claims(["nbf": String(Self.now + 1)]), policy: p) }
    }

    @Test("maxAge counts from iat, with the leeway, and needs iat")
    func maxAge() throws {
        let p = Self.policy(maxAge: 300)
        try Self.verify(Self.claims(["iat": String(Self.now - Self.leeway - 300)]), policy: p)
        expectJOSEError(.expired) {
            try Self.verify(Self.claims(["iat": String(Self.now - Self.leeway - 301)]), policy: p)
        }
        expectJOSEError(.missingClaim) { try Self.verify(Self.claims(["iat": nil]), policy: p) }
    }

    @Test("missing exp when required")
    func missingExp() throws {
        expectJOSEError(.missingClaim) { try Self.verify(Self.claims(["exp": nil])) }
        var p = Self.policy()
        p.requireExpiry = false
        try Self.verify(Self.claims(["exp": nil]), policy: p)
    }

    @Test(
        "NumericDates that are not numbers", arguments: ["exp", "nbf", "iat"],
        [
            #""1700000600""#, "true", "null", "[1700000600]", #"{"t":1700000600}"#, "1e400", "-1e400"
        ])
    func numericDateTypes(_ claim: String, _ value: String) {
        let e = expectJOSEError(.invalidClaim) { try Self.verify(Self.claims([claim: value])) }
        #expect(e?.claim == claim)
    }

    @Test(
        "iss must equal the configured issuer exactly",
        arguments: [
            (#""https://evil.example""#, JOSEError.Code.issuerMismatch), (#""https://idp.example/""#, .issuerMismatch),
            (#""HTTPS://IDP.EXAMPLE""#, .issuerMismatch), (#"["https://idp.example"]"#, .issuerMismatch),
            (#""https://idp.example\u0000""#, .issuerMismatch), ("1", .issuerMismatch), ("null", .issuerMismatch)
        ])
    func issuer(_ value: String, _ code: JOSEError.Code) {
        let e = expectJOSEError(code) { try Self.verify(Self.claims(["iss": value])) }
        #expect(e?.claim == "iss")
    }

    @Test("missing iss")
    func missingIssuer() {
        expectJOSEError(.missingClaim) { try Self.verify(Self.claims(["iss": nil])) }
    }

    @Test(
        "aud as a string or an array of strings",
        arguments: [
            (#""api""#, nil), (#""api2""#, nil), (#"["other","api"]"#, nil), (#"["api"]"#, nil),
            (#""other""#, JOSEError.Code.audienceMismatch), (#""API""#, .audienceMismatch),
            (#""api ""#, .audienceMismatch),
            (#"["other"]"#, .audienceMismatch), ("[]", .audienceMismatch), (#""api,api2""#, .audienceMismatch),
            // An array of non-strings is malformed, even when a string member would match.
            ("[1]", .invalidClaim), (#"["api",1]"#, .invalidClaim), (#"[["api"]]"#, .invalidClaim),
            (#"[null]"#, .invalidClaim),
            ("1", .invalidClaim), ("true", .invalidClaim), (#"{"aud":"api"}"#, .invalidClaim), ("null", .invalidClaim)
        ] as [(String, JOSEError.Code?)])
    func audience(_ value: String, _ code: JOSEError.Code?) throws {
        if let code {
            let e = expectJOSEError(code) { try Self.verify(Self.claims(["aud": value])) }
            #expect(e?.claim == "aud")
        } else {
            try Self.verify(Self.claims(["aud": value]))
        }
    }

    @Test("missing aud")
    func missingAudience() {
        expectJOSEError(.missingClaim) { try Self.verify(Self.claims(["aud": nil])) }
    }

    @Test("required claims")
    func requiredClaims() throws {
        let p = Self.policy(required: ["sub", "jti"])
        expectJOSEError(.missingClaim) { try Self.verify(Self.claims(), policy: p) }
        try Self.verify(Self.claims(["jti": #""1""#]), policy: p)
    }

    @Test(
        "typ where the policy requires at+jwt (RFC 9068 §2.1, RFC 7515 §4.1.9)",
        arguments: [
            ("at+jwt", nil), ("application/at+jwt", nil), ("AT+JWT", nil), ("Application/At+Jwt", nil),
            ("JWT", JOSEError.Code.typeMismatch), ("application/jwt", .typeMismatch), ("dpop+jwt", .typeMismatch),
            ("at+jwt ", .typeMismatch), ("application/application/at+jwt", .typeMismatch), ("", .typeMismatch),
            ("#1", .malformed), ("#[\"at+jwt\"]", .malformed)
        ] as [(String, JOSEError.Code?)])
    func typ(_ typ: String, _ code: JOSEError.Code?) throws {
        let p = Self.policy(type: "at+jwt")
        if let code {
            expectJOSEError(code) { try Self.verify(Self.claims(), typ: typ, policy: p) }
        } else {
            try Self.verify(Self.claims(), typ: typ, policy: p)
        }
    }

    @Test("typ missing where required; the policy's own spelling may carry application/")
    func typMissing() throws {
        expectJOSEError(.typeMismatch) { try Self.verify(Self.claims(), typ: nil, policy: Self.policy(type: "at+jwt")) }
        try Self.verify(Self.claims(), typ: "at+jwt", policy: Self.policy(type: "application/at+jwt"))
        // Without a required type any typ passes (the policy decides, not the token).
        try Self.verify(Self.claims(), typ: "JWT", policy: Self.policy())
    }

    @Test("claims are judged only after the signature: an expired forgery is a bad signature")
    func signatureBeforeClaims() throws {
        let c = Self.claims(["exp": String(Self.now - 1000), "iss": #""https://evil""#])
        let token = try Attack.forge(
            header: #"{"alg":"ES256","kid":"ES256"}"#, payload: c, alg: .ES256,
            key: JWK.generate(for: .ES256, kid: "ES256"))
        expectJOSEError(.badSignature) {
            _ = try JWTVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: Self.policy())
                .verify(token, now: Self.now)
        }
    }

    /// RFC 7519 §5.2: `cty: JWT` says the payload is itself a JWT (nested). A claims set under
    /// that header is not what it claims to be, and nested JWTs are not taken: refused, in
    /// every spelling RFC 7515 §4.1.10 allows; another `cty` is only a media type.
    @Test("cty JWT on a token that is not nested", arguments: ["JWT", "jwt", "application/JWT", "Application/jwt"])
    func ctyJWTIsRefused(_ cty: String) throws {
        let token = try Attack.forge(
            header: #"{"alg":"ES256","kid":"ES256","typ":"at+jwt","cty":"\#(cty)"}"#, payload: Self.claims(),
            alg: .ES256, key: Attack.key(.ES256))
        let error = expectJOSEError(.malformed) {
            _ = try JWTVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: Self.policy())
                .verify(token, now: Self.now)
        }
        #expect(error?.claim == "cty")
    }

    @Test func anotherCtyIsOnlyAMediaType() throws {
        let token = try Attack.forge(
            header: #"{"alg":"ES256","kid":"ES256","typ":"at+jwt","cty":"json"}"#, payload: Self.claims(),
            alg: .ES256, key: Attack.key(.ES256))
        _ = try JWTVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: Self.policy())
            .verify(token, now: Self.now)
    }
}
