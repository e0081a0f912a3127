import JOSE
import Testing

@testable import OAuth

@Suite("Access tokens: issuer choice, verification, authorization, identity headers, cache")
struct AccessTokenTests {
    static let now: Int64 = 1_800_000_000
    static let corpKey = try! JWK.generate(for: .ES256, kid: "corp-1")
    static let otherKey = try! JWK.generate(for: .ES256, kid: "other-1")

    static let verifier = AccessTokenVerifier(issuers: [
        IssuerPolicy(
            name: "corp", issuer: "https://idp.corp", algorithms: [.ES256], audiences: ["api"], requiredType: "at+jwt"),
        IssuerPolicy(name: "partner", issuer: "https://idp.partner", algorithms: [.ES256], audiences: ["api"])
    ])

    static func token(_ claims: JSONObject, key: JWK = corpKey, typ: String? = "at+jwt") -> String {
        var header = JSONObject()
        if let typ { header["typ"] = .string(typ) }
        return try! JWSSigner.sign(claims: claims, header: header, alg: .ES256, key: key)
    }

    static func claims(iss: String = "https://idp.corp", extra: [(String, JSONValue)] = []) -> JSONObject {
        var c = JSONObject([
            "iss": .string(iss), "aud": .string("api"), "sub": .string("alice"), "client_id": .string("app1"),
            "jti": .string("j-1"), "exp": .number(String(now + 300)), "iat": .number(String(now))
        ])
        for (k, v) in extra { c[k] = v }
        return c
    }

    func keys(_ name: String) -> JWKSet? {
        name == "corp" ? JWKSet(keys: [Self.corpKey]) : JWKSet(keys: [Self.otherKey])
    }

    @Test func validTokenFromTheRightIssuer() throws {
        let r = try Self.verifier.verify(Self.token(Self.claims()), now: Self.now, keys: keys).get()
        #expect(r.issuer == "corp" && r.subject == "alice" && r.expiresAt == Self.now + 300 && r.jkt == nil)
    }

    @Test func issuerIsChosenByIssThenOnlyItsKeysCount() {
        // Signed by corp's key but claiming to be from partner: partner's keys must decide.
        let forged = Self.token(Self.claims(iss: "https://idp.partner"), typ: nil)
        guard case .failure(.unknownKey) = Self.verifier.verify(forged, now: Self.now, keys: keys) else {
            Issue.record("a corp-signed token was accepted for partner")
            return
        }
        guard
            case .failure(.unknownIssuer) = Self.verifier.verify(
                Self.token(Self.claims(iss: "https://evil")), now: Self.now, keys: keys)
        else {
            Issue.record("unknown issuer accepted")
            return
        }
    }

    @Test func badSignatureIsNotAReasonToRefetch() {
        var t = Self.token(Self.claims())
        // ECDSA signatures are random: about one in 256 already ends in "AA", and must still
        // be changed.
        let replacement = t.hasSuffix("AA") ? "QA" : "AA"
        t.removeLast(2)
        t += replacement
        guard case .failure(.rejected(let e)) = Self.verifier.verify(t, now: Self.now, keys: keys) else {
            Issue.record("accepted")
            return
        }
        #expect(e.code == .badSignature || e.code == .malformed)
    }

    @Test func unknownKidAsksForARefetch() throws {
        let rotated = try JWK.generate(for: .ES256, kid: "corp-2")
        guard
            case .failure(.unknownKey(let issuer)) = Self.verifier.verify(
                Self.token(Self.claims(), key: rotated), now: Self.now, keys: keys)
        else {
            Issue.record("expected unknownKey")
            return
        }
        #expect(issuer == "corp")
    }

    @Test(
        "claims policy",
        arguments: [
            ("exp", JSONValue.number(String(now - 100)), JOSEError.Code.expired),
            ("aud", .string("other"), .audienceMismatch),
            ("nbf", .number(String(now + 500)), .notYetValid)
        ])
    func claimsPolicy(_ name: String, _ value: JSONValue, _ code: JOSEError.Code) {
        var c = Self.claims()
        c[name] = value
        guard case .failure(.rejected(let e)) = Self.verifier.verify(Self.token(c), now: Self.now, keys: keys) else {
            Issue.record("accepted")
            return
        }
        #expect(e.code == code)
    }

    @Test func idTokenIsNotAnAccessToken() {
        guard
            case .failure(.rejected(let e)) = Self.verifier.verify(
                Self.token(Self.claims(), typ: "JWT"), now: Self.now, keys: keys)
        else {
            Issue.record("typ JWT accepted where at+jwt is required")
            return
        }
        #expect(e.code == .typeMismatch)
    }

    @Test func dpopBindingIsReported() throws {
        let c = Self.claims(extra: [
            ("cnf", .object(JSONObject(["jkt": .string("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")])))
        ])
        let t = try Self.verifier.verify(Self.token(c), now: Self.now, keys: keys).get()
        #expect(t.jkt == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" && t.isSenderConstrained)
        // A cnf of another kind, or a jkt that is no SHA-256 thumbprint: bound, but not to a DPoP key.
        for cnf in [
            JSONObject(["x5t#S256": .string("abc")]), JSONObject(["jkt": .string("abc")]),
            JSONObject(["jkt": .number("1")])
        ] {
            let other = try Self.verifier.verify(
                Self.token(Self.claims(extra: [("cnf", .object(cnf))])), now: Self.now, keys: keys
            ).get()
            #expect(other.jkt == nil && other.isSenderConstrained)
        }
        #expect(
            try Self.verifier.verify(Self.token(Self.claims()), now: Self.now, keys: keys).get().isSenderConstrained
                == false)
    }

    @Test func certificateBindingIsReported() throws {
        let digest = [UInt8](repeating: 7, count: 32)
        let bound = try Self.verifier.verify(
            Self.token(
                Self.claims(extra: [("cnf", .object(JSONObject(["x5t#S256": .string(Base64URL.encode(digest))])))])),
            now: Self.now, keys: keys
        ).get()
        #expect(bound.x5tS256 == digest && !bound.hasMalformedX5t && bound.jkt == nil && bound.isSenderConstrained)
        // Not a SHA-256 (wrong length, padded, not base64url, not a string): bound, to nothing
        // a certificate can match.
        for value: JSONValue in [
            .string(Base64URL.encode(Array(digest.prefix(20)))), .string(Base64URL.encode(digest) + "="),
            .string(String(repeating: "*", count: 43)), .number("1")
        ] {
            let other = try Self.verifier.verify(
                Self.token(Self.claims(extra: [("cnf", .object(JSONObject(["x5t#S256": value])))])), now: Self.now,
                keys: keys
            ).get()
            #expect(other.x5tS256 == nil && other.hasMalformedX5t && other.isSenderConstrained)
        }
    }

    @Test func garbage() {
        for t in ["", "abc", "a.b.c", String(repeating: "a", count: 20_000)] {
            guard case .failure(.malformed) = Self.verifier.verify(t, now: Self.now, keys: keys) else {
                Issue.record("\(t.prefix(10)) accepted")
                return
            }
        }
    }

    @Test func scopesAndClaimRules() throws {
        let claims = try JSONParser.parse(
            """
            {"scope":"orders:read profile","scp":["extra"],"tenant":"acme","level":3,
             "realm_access":{"roles":["admin","dev"]},"groups":["a","b"]}
            """
        ).object!
        // `scope` alone counts by default: the vendor `scp` never widens it.
        #expect(AuthorizationRequirement(scopes: ["orders:read", "profile"]).check(claims) == nil)
        #expect(AuthorizationRequirement(scopes: ["orders:read", "extra"]).check(claims) == .missingScopes(["extra"]))
        #expect(
            AuthorizationRequirement(scopes: ["orders:write", "orders:read"]).check(claims)
                == .missingScopes(["orders:write"]))
        // An issuer that opts in to `scp` reads `scp` alone (array or string), never `scope`.
        #expect(AuthorizationRequirement(scopes: ["extra"]).check(claims, scopeClaim: .scp) == nil)
        #expect(
            AuthorizationRequirement(scopes: ["orders:read"]).check(claims, scopeClaim: .scp)
                == .missingScopes(["orders:read"]))
        let scpString = try JSONParser.parse(#"{"scp":"a b"}"#).object!
        #expect(AuthorizationRequirement.grantedScopes(scpString, from: .scp) == ["a", "b"])
        #expect(AuthorizationRequirement.grantedScopes(scpString, from: .scope).isEmpty)
        // RFC 9068 §2.2.3: `scope` is a string; an array there grants nothing.
        let scopeArray = try JSONParser.parse(#"{"scope":["admin"]}"#).object!
        #expect(AuthorizationRequirement.grantedScopes(scopeArray).isEmpty)
        let rules = AuthorizationRequirement(claims: [
            (ClaimPath("tenant")!, .equals("acme")), (ClaimPath("level")!, .oneOf(["2", "3"])),
            (ClaimPath("realm_access.roles")!, .contains("admin"))
        ])
        #expect(rules.check(claims) == nil)
        #expect(
            AuthorizationRequirement(claims: [(ClaimPath("tenant")!, .equals("other"))]).check(claims)
                == .claim("tenant"))
        #expect(
            AuthorizationRequirement(claims: [(ClaimPath("realm_access.roles")!, .contains("root"))]).check(claims)
                == .claim("realm_access.roles"))
        #expect(
            AuthorizationRequirement(claims: [(ClaimPath("missing.path")!, .equals("x"))]).check(claims)
                == .claim("missing.path"))
        // An array never "equals" a string.
        #expect(
            AuthorizationRequirement(claims: [(ClaimPath("groups")!, .equals("a"))]).check(claims) == .claim("groups"))
        #expect(ClaimPath("a..b") == nil)
    }

    @Test(
        "RFC 9068 §2.2: an at+jwt token needs sub, client_id, iat and jti",
        arguments: [
            ("sub", nil), ("sub", JSONValue.string("")), ("sub", .number("7")), ("client_id", nil),
            ("client_id", .string("")),
            ("jti", nil), ("jti", .string("")), ("jti", .array([])), ("iat", nil), ("iat", .string("now"))
        ] as [(String, JSONValue?)])
    func rfc9068RequiredClaims(name: String, value: JSONValue?) {
        var c = Self.claims()
        c[name] = value
        guard case .failure(.rejected(let e)) = Self.verifier.verify(Self.token(c), now: Self.now, keys: keys) else {
            Issue.record("accepted without a good \(name)")
            return
        }
        #expect(e.claim == name && (e.code == .missingClaim || e.code == .invalidClaim))
        // An issuer that does not declare the profile keeps accepting such tokens.
        c["iss"] = .string("https://idp.partner")
        #expect(
            (try? Self.verifier.verify(Self.token(c, key: Self.otherKey, typ: nil), now: Self.now, keys: keys).get())
                != nil
                || name == "iat")
    }

    @Test func scopeClaimFollowsTheIssuer() throws {
        let okta = AccessTokenVerifier(issuers: [
            IssuerPolicy(
                name: "corp", issuer: "https://idp.corp", algorithms: [.ES256],
                audiences: ["api"], scopeClaim: .scp)
        ])
        let t = try okta.verify(Self.token(Self.claims(), typ: nil), now: Self.now, keys: keys).get()
        #expect(t.scopeClaim == .scp)
        #expect(
            try Self.verifier.verify(Self.token(Self.claims()), now: Self.now, keys: keys).get().scopeClaim == .scope)
    }

    @Test func identityHeaderValues() throws {
        let claims = try JSONParser.parse(
            """
            {"sub":"alice","email":"a@x","groups":["g1","g2"],"n":5,"addr":{"c":"NL"},"evil":"x\\r\\nX-Admin: 1"}
            """
        ).object!
        let h = IdentityHeaders(mapping: [
            ("X-User", ClaimPath("sub")!), ("X-Groups", ClaimPath("groups")!), ("X-N", ClaimPath("n")!),
            ("X-Addr", ClaimPath("addr")!), ("X-Evil", ClaimPath("evil")!), ("X-None", ClaimPath("none")!)
        ])
        let values = h.values(for: claims)
        #expect(values.map(\.0) == ["X-User", "X-Groups", "X-N", "X-Addr"])
        #expect(values.map(\.1) == ["alice", "g1,g2", "5", "{\"c\":\"NL\"}"])
        #expect(IdentityHeaders.standard.headerNames.contains("X-Forwarded-User"))
        // RFC 9110 §5.5: every control byte but HTAB drops the header (DEL too); the caller
        // hears which header, to log it.
        for byte in [0x00, 0x01, 0x08, 0x0a, 0x0b, 0x0c, 0x0d, 0x1b, 0x1f, 0x7f] as [UInt8] {
            var c = JSONObject()
            c["name"] = .string("a" + String(decoding: [byte], as: UTF8.self) + "b")
            var omitted: [String] = []
            #expect(
                IdentityHeaders(mapping: [("X-Name", ClaimPath("name")!)]).values(for: c) { omitted.append($0) }.isEmpty
            )
            #expect(omitted == ["X-Name"], "byte \(byte)")
        }
        #expect(IdentityHeaders.isFieldValue("Zoë\tvan Dijk ~!"))
    }

    @Test func cacheIsBoundedAndExpires() {
        var cache = ValidatedTokenCache<Int>(capacity: 3, maxBytes: 1000, ttl: 60)
        cache.put("a", 1, expiresAt: 100, now: 0)
        cache.put("b", 2, expiresAt: 1000, now: 0)
        #expect(cache.get("a", now: 50) == 1)
        #expect(cache.get("a", now: 100) == nil, "expired at exp")
        #expect(cache.get("b", now: 59) == 2)
        #expect(cache.get("b", now: 61) == nil, "ttl caps the lifetime")
        for i in 0..<10 { cache.put("t\(i)", i, expiresAt: 1000, now: 0) }
        #expect(cache.count == 3)
        #expect(cache.get("t9", now: 1) == 9 && cache.get("t0", now: 1) == nil)
        var small = ValidatedTokenCache<Int>(capacity: 100, maxBytes: 10, ttl: 60)
        small.put("12345", 1, expiresAt: 100, now: 0)
        small.put("67890", 2, expiresAt: 100, now: 0)
        small.put("abcde", 3, expiresAt: 100, now: 0)
        #expect(small.bytes <= 10 && small.count == 2)
        small.put(String(repeating: "x", count: 11), 4, expiresAt: 100, now: 0)
        #expect(small.count == 2, "an entry larger than the whole budget is not cached")
        #expect(cache.hits > 0 && cache.misses > 0)
    }
}

@Suite("Signed introspection answers (RFC 9701)")
struct SignedIntrospectionTests {
    static let now: Int64 = 1_800_000_000
    let key = try! JWK.generate(for: .ES256, kid: "as-1")

    func answer(_ edit: (inout JSONObject) -> Void = { _ in }, typ: String = "token-introspection+jwt", key: JWK? = nil)
        throws -> [UInt8]
    {
        var claims = JSONObject()
        claims["iss"] = .string("https://as.example")
        claims["aud"] = .string("gateway")
        claims["iat"] = .number(String(Self.now))
        claims["token_introspection"] = .object(JSONObject(["active": .bool(true), "sub": .string("alice")]))
        edit(&claims)
        var header = JSONObject()
        header["typ"] = .string(typ)
        header["kid"] = .string("as-1")
        return Array(try JWSSigner.sign(claims: claims, header: header, alg: .ES256, key: key ?? self.key).utf8)
    }

    func unwrap(_ body: [UInt8]) throws -> Result<[UInt8], JOSEError> {
        let keys = try JWKSet(bytes: Array(JWKSet(keys: [key]).publicJSON().utf8))
        return SignedIntrospectionResponse.unwrap(
            body, issuer: "https://as.example", audience: "gateway", keys: keys, algorithms: [.ES256], leeway: 30,
            now: Self.now)
    }

    @Test func aGoodAnswerGivesItsJSON() throws {
        let inner = try unwrap(try answer()).get()
        let obj = try JSONParser.parse(inner).object
        #expect(obj?["active"] == .bool(true) && obj?["sub"] == .string("alice"))
    }

    @Test func forgeriesAreRefused() throws {
        let other = try JWK.generate(for: .ES256, kid: "as-1")
        let cases: [(String, [UInt8])] = [
            ("another key", try answer(key: other)),
            ("another audience", try answer { $0["aud"] = .string("someone") }),
            ("another issuer", try answer { $0["iss"] = .string("https://evil.example") }),
            ("an old answer", try answer { $0["iat"] = .number(String(Self.now - 3600)) }),
            ("no iat", try answer { $0["iat"] = nil }),
            ("no token_introspection", try answer { $0["token_introspection"] = nil }),
            ("token_introspection not an object", try answer { $0["token_introspection"] = .string("x") }),
            ("another typ", try answer(typ: "JWT")),
            ("not a JWT", Array(#"{"active":true}"#.utf8))
        ]
        for (what, body) in cases {
            guard case .failure = try unwrap(body) else {
                Issue.record("\(what) accepted")
                continue
            }
        }
    }
}
