import JOSE
import Testing

@testable import OAuth

/// The authorization server's grants as records: a code redeemed only by its client, redirect
/// URI, PKCE verifier, resource and DPoP key, within 60 s; a refresh-token family that
/// rotates on each use and ends when a token that is not the current one comes back; ID-JAGs
/// checked claim by claim; the access tokens it signs; and its metadata.
@Suite("Authorization server: codes, refresh families, ID-JAGs, tokens")
struct AuthorizationGrantTests {
    static let now: Int64 = 1_800_000_000
    static let grant = GrantSubject(
        subject: "alice", idpIssuer: "https://idp.example", clientID: "https://app.example/c.json",
        resource: "https://gw.example/mcp", scopes: ["mcp:read"],
        claims: JSONObject(["email": .string("alice@example.com")]))

    @Test func aCodeIsRedeemedOnlyAsItWasIssued() throws {
        let verifier = PKCE.makeVerifier()
        let challenge = try #require(PKCE.challenge(for: verifier))
        let code = AuthorizationCodeRecord(
            grant: Self.grant, redirectURI: "http://127.0.0.1:5000/cb", codeChallenge: challenge, issuedAt: Self.now,
            dpopJKT: nil)
        let client = Self.grant.clientID
        try code.redeem(
            clientID: client, redirectURI: "http://127.0.0.1:5000/cb", resource: nil, verifier: verifier, jkt: nil,
            now: Self.now + 10)
        try code.redeem(
            clientID: client, redirectURI: "http://127.0.0.1:5000/cb", resource: "https://gw.example/mcp",
            verifier: verifier, jkt: "any", now: Self.now + 10)
        let refusals: [(String?, String?, String?, Int64, String)] = [
            ("http://127.0.0.1:5000/cb", nil, verifier, Self.now + 60, "expired"),
            ("http://127.0.0.1:5001/cb", nil, verifier, Self.now, "redirect_uri"),
            (nil, nil, verifier, Self.now, "redirect_uri"),
            ("http://127.0.0.1:5000/cb", nil, PKCE.makeVerifier(), Self.now, "code_verifier"),
            ("http://127.0.0.1:5000/cb", nil, nil, Self.now, "code_verifier"),
            ("http://127.0.0.1:5000/cb", "https://gw.example/other", verifier, Self.now, "resource")
        ]
        for (redirect, resource, v, at, why) in refusals {
            do {
                try code.redeem(
                    clientID: client, redirectURI: redirect, resource: resource, verifier: v, jkt: nil, now: at)
                Issue.record("redeemed: \(why)")
            } catch {
                #expect(error.code == "invalid_grant" && error.description.contains(why), "\(error)")
            }
        }
        #expect(throws: TokenEndpointError.self) {
            try code.redeem(
                clientID: "https://evil.example/c.json", redirectURI: "http://127.0.0.1:5000/cb", resource: nil,
                verifier: verifier, jkt: nil, now: Self.now)
        }
        // Bound to a DPoP key at /authorize: only that key's proof redeems it.
        var bound = code
        bound.dpopJKT = "jkt-1"
        #expect(throws: TokenEndpointError.self) {
            try bound.redeem(
                clientID: client, redirectURI: "http://127.0.0.1:5000/cb", resource: nil, verifier: verifier, jkt: nil,
                now: Self.now)
        }
        #expect(AuthorizationCodeRecord(encoded: bound.encoded) == bound)
    }

    @Test func aRefreshFamilyRotatesAndEndsOnReuse() throws {
        let (family, first) = RefreshTokenFamily.start(Self.grant, lifetime: 3600, now: Self.now, dpopJKT: nil)
        #expect(RefreshTokenFamily.Token(first.text) == first)
        guard case .rotated(let next, let second) = family.use(first, clientID: Self.grant.clientID, now: Self.now + 1)
        else {
            Issue.record("the current token did not rotate")
            return
        }
        #expect(next.generation == 2 && second != first && second.familyID == first.familyID)
        // The first token again: a reuse, which ends the family.
        #expect(next.use(first, clientID: Self.grant.clientID, now: Self.now + 2) == .reused)
        // A token it never issued (a guess on the family's id): refused, no more.
        let guessed = try #require(RefreshTokenFamily.Token(first.familyID + "." + String(repeating: "A", count: 43)))
        #expect(next.use(guessed, clientID: Self.grant.clientID, now: Self.now + 2) == .unknown)
        // Another client's request is refused before the token is judged (no reuse is counted).
        #expect(next.use(first, clientID: "https://evil.example/c.json", now: Self.now + 2) == .otherClient)
        #expect(next.use(second, clientID: "https://evil.example/c.json", now: Self.now + 2) == .otherClient)
        #expect(next.use(second, clientID: Self.grant.clientID, now: Self.now + 3600) == .expired)
        #expect(RefreshTokenFamily(encoded: next.encoded) == next)
        // Only the secret's digest is kept.
        #expect(!String(decoding: next.encoded, as: UTF8.self).contains(second.secret))
        for bad in ["", "a.b", first.familyID + "." + first.secret + ".x", first.familyID + "!" + first.secret] {
            #expect(RefreshTokenFamily.Token(bad) == nil)
        }
    }

    static let idpKey = try! JWK.generate(for: .ES256, kid: "idp-1")

    func assertion(typ: String = "oauth-id-jag+jwt", _ change: (inout JSONObject) -> Void = { _ in }) throws -> String {
        var c = JSONObject()
        c["iss"] = .string("https://idp.example")
        c["sub"] = .string("alice")
        c["aud"] = .string("https://gw.example")
        c["client_id"] = .string("https://app.example/c.json")
        c["resource"] = .string("https://gw.example/mcp")
        c["scope"] = .string("mcp:read mcp:write")
        c["jti"] = .string("jag-1")
        c["iat"] = .number(String(Self.now))
        c["exp"] = .number(String(Self.now + 300))
        change(&c)
        return try JWSSigner.sign(claims: c, header: JSONObject(["typ": .string(typ)]), alg: .ES256, key: Self.idpKey)
    }

    var expectations: IdentityAssertionGrant.Expectations {
        IdentityAssertionGrant.Expectations(
            asIssuer: "https://gw.example", resources: ["https://gw.example/mcp"],
            clientID: "https://app.example/c.json",
            issuers: ["https://idp.example": (JWKSet(keys: [try! JWK(object: Self.idpKey.publicJWK())]), [.ES256])])
    }

    @Test func anIDJAGIsCheckedClaimByClaim() throws {
        let g = try IdentityAssertionGrant(try assertion(), expecting: expectations, now: Self.now + 5)
        #expect(g.subject == "alice" && g.scopes == ["mcp:read", "mcp:write"] && g.jti == "jag-1")
        let other = try JWK.generate(for: .ES256, kid: "idp-1")
        let cases: [(String, String)] = [
            (try assertion(typ: "JWT"), "typ"),
            (try assertion { $0["iss"] = .string("https://evil.example") }, "issuer"),
            (try assertion { $0["aud"] = .string("https://other.example") }, "aud"),
            (try assertion { $0["resource"] = .string("https://gw.example/other") }, "resource"),
            (try assertion { $0["resource"] = nil }, "resource"),
            (try assertion { $0["client_id"] = .string("https://evil.example/c.json") }, "client_id"),
            (try assertion { $0["jti"] = nil }, "jti"),
            (try assertion { $0["sub"] = nil }, "sub"),
            (try assertion { $0["exp"] = .number(String(Self.now - 100)) }, "expired"),
            (try assertion { $0["iat"] = .number(String(Self.now + 100)) }, "future"),
            (try assertion { $0["exp"] = .number(String(Self.now + 3600)) }, "longer"),
            (
                try JWSSigner.sign(
                    claims: try CompactJWS(try assertion(), maxSize: 8192).claims(),
                    header: JSONObject(["typ": .string("oauth-id-jag+jwt")]), alg: .ES256, key: other), "signature"
            ),
            ("not.a.jwt", "signed JWT")
        ]
        for (token, why) in cases {
            do {
                _ = try IdentityAssertionGrant(token, expecting: expectations, now: Self.now + 5)
                Issue.record("accepted: \(why)")
            } catch {
                #expect(error.description.contains(why), "\(why): \(error.description)")
            }
        }
    }

    @Test func theAccessTokenIsAnRFC9068JWTForOneResource() throws {
        let key = try JWK.generate(for: .ES256, kid: "as-1")
        var g = IssuedAccessToken.Grant(
            issuer: "https://gw.example", subject: "alice", idpIssuer: "https://idp.example",
            clientID: "https://app.example/c.json", resource: "https://gw.example/mcp", scopes: ["mcp:read"],
            jkt: "thumb", extraClaims: JSONObject(["email": .string("a@example.com"), "iss": .string("https://evil")]))
        g.scopes.append("mcp:write")
        let t = try IssuedAccessToken(g, lifetime: 600, now: Self.now, key: key, alg: .ES256)
        let jws = try CompactJWS(t.token, maxSize: 8192)
        #expect(jws.header.typ == "at+jwt" && jws.header.kid == "as-1")
        try JWSVerifier(keys: JWKSet(keys: [try JWK(object: key.publicJWK())]), algorithms: [.ES256]).verify(jws)
        let c = try jws.claims()
        #expect(c["iss"]?.string == "https://gw.example" && c["aud"]?.string == "https://gw.example/mcp")
        #expect(c["scope"]?.string == "mcp:read mcp:write" && c["idp_iss"]?.string == "https://idp.example")
        #expect(c["cnf"]?.object?["jkt"]?.string == "thumb" && c["email"]?.string == "a@example.com")
        #expect(c["exp"]?.int64 == Self.now + 600 && c["jti"]?.string == t.jti)
    }

    @Test func theMetadataListsWhatIsImplemented() {
        var m = AuthorizationServerMetadata(
            issuer: "https://gw.example", scopes: ["mcp:read", "offline_access"], registration: false,
            identityAssertions: false, dpopAlgorithms: ["ES256"], signingAlgorithms: ["ES256", "RS256"])
        var d = m.document
        #expect(d["token_endpoint"]?.string == "https://gw.example/oauth2/as/token")
        #expect(d["scopes_supported"] == .array([.string("mcp:read")]))
        #expect(d["code_challenge_methods_supported"] == .array([.string("S256")]))
        #expect(d["registration_endpoint"] == nil && d["authorization_grant_profiles_supported"] == nil)
        #expect(d["client_id_metadata_document_supported"] == .bool(true))
        m.identityAssertions = true
        m.registration = true
        d = m.document
        #expect(d["registration_endpoint"]?.string == "https://gw.example/oauth2/as/register")
        #expect(d["grant_types_supported"]?.array?.contains(.string(AuthorizationServerMetadata.jwtBearer)) == true)
    }
}
