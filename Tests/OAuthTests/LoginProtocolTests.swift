import Foundation
import JOSE
import Testing

@testable import OAuth

/// The OAuth/OIDC rules of the browser login, without sockets and with a fixed clock: ID token
/// validation from the attacker's side (OIDC Core §3.1.3.7), callback parsing (RFC 6749
/// §4.1.2, RFC 9207), return targets (no open redirect), request objects (RFC 9101).
@Suite("Login protocol rules")
struct LoginProtocolTests {
    static let now: Int64 = 1_700_000_000
    static let key = try! JWK.generate(for: .RS256, kid: "as-1")
    static let keys = JWKSet(keys: [try! JWK(object: key.publicJWK())])
    static let verifier = IDTokenVerifier(issuer: "https://as.example", clientID: "web", algorithms: [.RS256, .ES256])

    static func idToken(
        _ change: (inout JSONObject) -> Void = { _ in }, key signer: JWK = key, alg: JWSAlgorithm = .RS256
    ) throws -> String {
        var c = JSONObject()
        c["iss"] = .string("https://as.example")
        c["sub"] = .string("alice")
        c["aud"] = .string("web")
        c["exp"] = .number(String(now + 300))
        c["iat"] = .number(String(now))
        c["nonce"] = .string("n-1")
        change(&c)
        return try JWSSigner.sign(claims: c, alg: alg, key: signer)
    }

    func refused(
        _ token: String, nonce: String? = "n-1", accessToken: String? = nil, _ code: JOSEError.Code,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try Self.verifier.verify(token, keys: Self.keys, nonce: nonce, accessToken: accessToken, now: Self.now)
            Issue.record("accepted an ID token that should fail with \(code)", sourceLocation: sourceLocation)
        } catch let e as JOSEError {
            #expect(e.code == code, "got \(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func validIDToken() throws {
        let claims = try Self.verifier.verify(
            try Self.idToken(), keys: Self.keys, nonce: "n-1", accessToken: nil, now: Self.now)
        #expect(claims["sub"]?.string == "alice")
    }

    @Test func idTokenAttacks() throws {
        refused(try Self.idToken { $0["nonce"] = .string("other") }, .invalidClaim)
        refused(try Self.idToken { $0["nonce"] = nil }, .invalidClaim)
        refused(try Self.idToken { $0["aud"] = .string("another-client") }, .audienceMismatch)
        // several aud, no azp
        refused(try Self.idToken { $0["aud"] = .array([.string("web"), .string("other")]) }, .audienceMismatch)
        refused(
            try Self.idToken {
                $0["aud"] = .string("web")
                $0["azp"] = .string("other")
            }, .audienceMismatch)
        refused(try Self.idToken { $0["iss"] = .string("https://evil.example") }, .issuerMismatch)
        refused(try Self.idToken { $0["exp"] = .number(String(Self.now - 100)) }, .expired)
        refused(try Self.idToken { $0["iat"] = .number(String(Self.now - 3600)) }, .expired)
        refused(try Self.idToken { $0["sub"] = nil }, .missingClaim)
        // Signed by another key (same kid), and with an algorithm not allowed.
        refused(try Self.idToken(key: try JWK.generate(for: .RS256, kid: "as-1")), .badSignature)
        let hs = try JWK(json: #"{"kty":"oct","kid":"as-1","k":"\#(Base64URL.encode(SecureRandom.bytes(32)))"}"#)
        refused(try Self.idToken(key: hs, alg: .HS256), .algorithmNotAllowed)
        // at_hash must match the access token when present.
        let at = "access-token-1"
        let good = Base64URL.encode(Array(Digest.sha256.hash(Array(at.utf8)).prefix(16)))
        _ = try Self.verifier.verify(
            try Self.idToken { $0["at_hash"] = .string(good) }, keys: Self.keys, nonce: "n-1", accessToken: at,
            now: Self.now)
        refused(try Self.idToken { $0["at_hash"] = .string(good) }, accessToken: "another-token", .invalidClaim)
        // Several audiences with azp = this client pass.
        _ = try Self.verifier.verify(
            try Self.idToken {
                $0["aud"] = .array([.string("web"), .string("api")])
                $0["azp"] = .string("web")
            },
            keys: Self.keys, nonce: "n-1", accessToken: nil, now: Self.now)
    }

    @Test func callbackParsing() {
        let iss = "https://as.example"
        #expect(
            AuthorizationResponse.parse(
                query: "code=c&state=s&iss=https%3A%2F%2Fas.example", expectedIssuer: iss, issRequired: true)
                == .success(.code("c", state: "s")))
        #expect(
            AuthorizationResponse.parse(query: "code=c&state=s", expectedIssuer: iss, issRequired: true)
                == .failure(.issuerMismatch))
        #expect(
            AuthorizationResponse.parse(
                query: "code=c&state=s&iss=https%3A%2F%2Fevil", expectedIssuer: iss, issRequired: false)
                == .failure(.issuerMismatch))
        #expect(
            AuthorizationResponse.parse(query: "code=c&state=s", expectedIssuer: iss, issRequired: false)
                == .success(.code("c", state: "s")))
        #expect(
            AuthorizationResponse.parse(query: "error=access_denied&state=s", expectedIssuer: iss, issRequired: false)
                == .success(.error("access_denied", description: nil, state: "s")))
        for bad in ["code=c&code=d&state=s", "code=c", "state=s", "code=%ZZ&state=s", "code=&state=s"] {
            guard
                case .failure(.malformed) = AuthorizationResponse.parse(
                    query: Substring(bad), expectedIssuer: iss, issRequired: false)
            else {
                Issue.record("accepted \(bad)")
                continue
            }
        }
    }

    @Test(arguments: [
        "//evil.example", "/\\evil.example", "\\\\evil.example", "/%2F%2Fevil.example", "%2F%2Fevil.example",
        "/%5Cevil.example", "https:evil.example", "https:/evil.example", "javascript:alert(1)", "JAVASCRIPT:alert(1)",
        "data:text/html,x", "evil.example", "https://evil.example", "https://app.example.com.evil.example",
        "https://app.example.com@evil.example", "https://evil.example\\@app.example.com", "/a\r\nSet-Cookie: x=1",
        "/\t/evil.example", " /x", "https://app.example.com:99999x", "http://app.example.com/", "", "/%0d%0aX: y",
        // RFC 3986 §5.2.4: "//host" once dot segments are resolved, raw or decoded.
        "/.//evil.example", "/./%2Fevil.example", "/%2e//evil.example", "/a/..//evil.example", "/../..//evil.example/x",
        "https://app.example.com/.//evil.example", "https://app.example.com/%2e%2e//evil.example",
        // Ports no host has: out of range, zero, empty, signed, non-ASCII digits.
        "https://app.example.com:99999/", "https://app.example.com:65536/", "https://app.example.com:0/",
        "https://app.example.com:/x", "https://app.example.com:-1/", "https://app.example.com:\u{663}/",
        "https://app.example.com:000443/",
        // Every decoding, down to the last: an upstream may decode twice.
        "/%252F%252Fevil.example", "/%25252F%25252Fevil.example", "/%255Cevil.example", "/%250d%250aX:%20y",
        "https://app.example.com/%252F%252Fevil.example",
        // What is returned, decoded, is no network-path either ("/a%2F/.." is removed).
        "/a%2F/../%2F%2Fevil.example", "/a%2F%2F/../%2F%2Fevil.example",
        // Bytes, not graphemes: "/" + U+0301 is one Character, but a "/" to a browser.
        "//\u{301}evil.example", "https://evil.example/\u{301}x.apps.example.com",
        "https://evil.example?\u{301}.apps.example.com",
        // An allowed host is ASCII (Unicode lowercases U+212A to "k").
        "https://\u{212A}.apps.example.com/"
    ])
    func openRedirectsRefused(target: String) {
        #expect(ReturnTo(allowedHosts: ["app.example.com", "*.apps.example.com"]).check(target) == nil)
    }

    /// Form fields split at the bytes "&" and "=", as the AS and any upstream split them: an
    /// "=" or "&" followed by a combining mark is one Swift `Character`, still a separator.
    @Test func formFieldsSplitAtBytes() {
        func decode(_ s: String) -> [String]? { FormEncoding.decode(Substring(s))?.map { "\($0.0)|\($0.1)" } }
        #expect(decode("state=\u{301}x") == ["state|\u{301}x"])
        #expect(decode("code=c&\u{301}state=s") == ["code|c", "\u{301}state|s"])
        #expect(decode("a=b&\u{301}&c=d") == ["a|b", "\u{301}|", "c|d"])
        #expect(
            AuthorizationResponse.parse(query: "code=c&state=s&\u{301}state=t", expectedIssuer: "i", issRequired: false)
                == .success(.code("c", state: "s")))
    }

    @Test(arguments: [
        "/", "/orders/7?tab=2#top", "/a%20b", "https://app.example.com/x", "https://APP.example.com:8443/",
        "https://a.b.apps.example.com/"
    ])
    func allowedTargets(target: String) {
        #expect(ReturnTo(allowedHosts: ["app.example.com", "*.apps.example.com"]).check(target) == target)
    }

    @Test(arguments: [
        ("/a/./b/../c?x=/../y#/./z", "/a/c?x=/../y#/./z"), ("/..//../orders", "/orders"), ("/a/b/..", "/a/"),
        ("/./", "/"), ("/a/%2e%2e/b", "/a/%2e%2e/b"),
        ("https://app.example.com:65535/a", "https://app.example.com:65535/a")
    ])
    func dotSegmentsResolve(target: String, want: String) {
        #expect(ReturnTo(allowedHosts: ["app.example.com"]).check(target) == want)
    }

    @Test func requestObjectClaims() throws {
        let p = AuthorizationParameters(
            clientID: "web", redirectURI: "https://gw/cb", scope: ["openid", "email"], state: "s", nonce: "n",
            codeChallenge: "c", extra: [("prompt", "login")])
        let jwt = try RequestObject.sign(p, audience: "https://as.example", key: Self.key, alg: .RS256, now: Self.now)
        let jws = try CompactJWS(jwt)
        #expect(jws.header.typ == "oauth-authz-req+jwt" && jws.header.kid == "as-1" && jws.header.alg == .RS256)
        let c = try jws.claims()
        #expect(
            c["iss"]?.string == "web" && c["aud"]?.string == "https://as.example" && c["client_id"]?.string == "web")
        #expect(
            c["response_type"]?.string == "code" && c["code_challenge_method"]?.string == "S256"
                && c["prompt"]?.string == "login")
        #expect(c["scope"]?.string == "openid email" && c["state"]?.string == "s" && c["nonce"]?.string == "n")
        #expect(
            c["exp"]?.int64 == Self.now + 60 && c["nbf"]?.int64 == Self.now
                && (c["jti"]?.string?.utf8.count ?? 99) <= 64)
        try JWSVerifier(keys: Self.keys, algorithms: [.RS256]).verify(jws)
    }

    @Test func providerMetadataMustNameItsIssuer() throws {
        let good =
            #"{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","require_pushed_authorization_requests":true,"authorization_response_iss_parameter_supported":true}"#
        let m = try ProviderMetadata.parse(Array(good.utf8), expectedIssuer: "https://as.example")
        #expect(
            m.requirePushedAuthorizationRequests && m.authorizationResponseIssParameterSupported
                && m.tokenEndpoint == "https://as.example/t")
        #expect(throws: JOSEError.self) {
            try ProviderMetadata.parse(Array(good.utf8), expectedIssuer: "https://other.example")
        }
        #expect(throws: JOSEError.self) {
            try ProviderMetadata.parse(
                Array(#"{"issuer":"https://as.example","token_endpoint":"javascript:x"}"#.utf8),
                expectedIssuer: "https://as.example")
        }
    }

    @Test func formDecoding() {
        #expect(FormEncoding.decode("a=1&b=x+y&c=%2F%3D") ?? [] == [("a", "1"), ("b", "x y"), ("c", "/=")].map { $0 })
        #expect(FormEncoding.decode("a=%G0") == nil)
        #expect(FormEncoding.decode("a=%FF") == nil)  // not UTF-8
    }
}

private func == (a: [(String, String)], b: [(String, String)]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0 == $1 }
}

@Suite("Back-channel logout tokens (OIDC Back-Channel Logout 1.0 §2.6)")
struct LogoutTokenTests {
    static let now: Int64 = 1_700_000_000
    static let key = LoginProtocolTests.key
    static let verifier = LogoutTokenVerifier(issuer: "https://as.example", clientID: "web", algorithms: [.RS256])

    static func token(
        typ: String? = "logout+jwt", key signer: JWK = key, _ change: (inout JSONObject) -> Void = { _ in }
    ) throws -> String {
        var c = JSONObject()
        c["iss"] = .string("https://as.example")
        c["aud"] = .string("web")
        c["iat"] = .number(String(now))
        c["jti"] = .string("j-1")
        c["sid"] = .string("s-1")
        c["events"] = .object(JSONObject([LogoutTokenVerifier.event: .object(JSONObject())]))
        change(&c)
        var h = JSONObject()
        if let typ { h["typ"] = .string(typ) }
        return try JWSSigner.sign(claims: c, header: h, alg: .RS256, key: signer)
    }

    func refused(_ token: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: JOSEError.self, sourceLocation: sourceLocation) {
            try Self.verifier.verify(token, keys: LoginProtocolTests.keys, now: Self.now)
        }
    }

    @Test func validTokens() throws {
        let t = try Self.verifier.verify(try Self.token(), keys: LoginProtocolTests.keys, now: Self.now)
        #expect(t == .init(sid: "s-1", sub: nil, jti: "j-1", iat: Self.now))
        let bySub = try Self.verifier.verify(
            try Self.token(typ: nil) {
                $0["sid"] = nil
                $0["sub"] = .string("alice")
            },
            keys: LoginProtocolTests.keys, now: Self.now)
        #expect(bySub.sub == "alice" && bySub.sid == nil)
    }

    @Test func everyRuleBroken() throws {
        refused(try Self.token { $0["nonce"] = .string("n") })  // an ID token's nonce
        refused(try Self.token { $0["events"] = nil })
        refused(try Self.token { $0["events"] = .object(JSONObject(["other": .object(JSONObject())])) })
        refused(try Self.token { $0["events"] = .object(JSONObject([LogoutTokenVerifier.event: .string("x")])) })
        refused(try Self.token { $0["sid"] = nil })  // neither sid nor sub
        refused(try Self.token { $0["jti"] = nil })
        refused(try Self.token { $0["aud"] = .string("other") })
        refused(try Self.token { $0["iss"] = .string("https://evil.example") })
        refused(try Self.token { $0["iat"] = .number(String(Self.now - 3600)) })  // too old
        refused(try Self.token { $0["iat"] = .number(String(Self.now + 3600)) })  // from the future
        refused(try Self.token { $0["exp"] = .number(String(Self.now - 100)) })
        refused(try Self.token(typ: "at+jwt"))  // an access token
        // generic typ: fine
        _ = try Self.verifier.verify(try Self.token(typ: "JWT"), keys: LoginProtocolTests.keys, now: Self.now)
        refused(try Self.token(key: try JWK.generate(for: .RS256, kid: "as-1")))  // signed by another key
        refused("not.a.token")
    }
}
