import Testing

@testable import OAuth

@Suite("RFC 6750 token extraction and challenges")
struct BearerTests {
    @Test func noCredentials() {
        #expect(BearerTokenExtractor.extract(authorization: []) == .none)
    }

    @Test(
        "Authorization header forms",
        arguments: [
            ("Bearer abc.def-ghi_~+/==", PresentedCredential.bearer("abc.def-ghi_~+/==")),
            ("bearer abc", .bearer("abc")), ("BEARER  abc", .bearer("abc")), ("DPoP abc", .dpop("abc")),
            ("Bearer a b", .invalid(reason: "malformed Bearer token")),
            ("Bearer ", .invalid(reason: "malformed Bearer token")),
            ("Bearer a=b", .invalid(reason: "malformed Bearer token")),
            ("Bearer a\"b", .invalid(reason: "malformed Bearer token"))
        ])
    func headerForms(_ header: String, _ expected: PresentedCredential) {
        #expect(BearerTokenExtractor.extract(authorization: [header]) == expected)
    }

    /// Every byte against RFC 6750 §2.1's b64token grammar, in every position: the checker
    /// reads bytes through two bit masks, so each of the 256 is pinned here.
    @Test func b64TokenAcceptsExactlyItsBytes() {
        let allowed = Set(
            Array(UInt8(ascii: "A")...UInt8(ascii: "Z")) + Array(UInt8(ascii: "a")...UInt8(ascii: "z"))
                + Array(UInt8(ascii: "0")...UInt8(ascii: "9")) + "-._~+/".utf8)
        for b in UInt8.min...UInt8.max where b != UInt8(ascii: "=") {
            let token = String(decoding: [UInt8(ascii: "a"), b, UInt8(ascii: "z")], as: UTF8.self)
            #expect(BearerTokenExtractor.isB64Token(token) == allowed.contains(b), "byte \(b)")
            #expect(BearerTokenExtractor.isB64Token(String(decoding: [b], as: UTF8.self)) == allowed.contains(b))
        }
        // "=" only as trailing padding, after at least one token byte.
        #expect(BearerTokenExtractor.isB64Token("ab=="))
        #expect(!BearerTokenExtractor.isB64Token("=="))
        #expect(!BearerTokenExtractor.isB64Token("a=b"))
        #expect(!BearerTokenExtractor.isB64Token(""))
        #expect(BearerTokenExtractor.isB64Token(String(repeating: "x", count: 8192)))
    }

    @Test func otherSchemesAreInvalidRequests() {
        guard case .invalid = BearerTokenExtractor.extract(authorization: ["Basic Zm9vOmJhcg=="]) else {
            Issue.record("Basic accepted")
            return
        }
        guard case .invalid = BearerTokenExtractor.extract(authorization: ["Bearer"]) else {
            Issue.record("no token accepted")
            return
        }
    }

    @Test func exactlyOneCredential() {
        guard case .invalid = BearerTokenExtractor.extract(authorization: ["Bearer a", "Bearer b"]) else {
            Issue.record("two headers")
            return
        }
        let both = BearerTokenExtractor.extract(
            authorization: ["Bearer a"], queryTokens: ["b"], sources: TokenSources(query: true))
        guard case .invalid = both else {
            Issue.record("header + query accepted")
            return
        }
    }

    @Test func queryAndFormOnlyWhenAllowed() {
        guard case .invalid = BearerTokenExtractor.extract(authorization: [], queryTokens: ["abc"]) else {
            Issue.record("query accepted by default")
            return
        }
        #expect(
            BearerTokenExtractor.extract(authorization: [], queryTokens: ["abc"], sources: TokenSources(query: true))
                == .bearer("abc"))
        #expect(
            BearerTokenExtractor.extract(authorization: [], formTokens: ["abc"], sources: TokenSources(formBody: true))
                == .bearer("abc"))
    }

    @Test func challenges() {
        #expect(Challenge(realm: "api").headerValue == "Bearer realm=\"api\"")
        let c = Challenge(
            realm: "a\"p\\i", error: .insufficient_scope, errorDescription: "needs\u{7} more\n",
            scope: ["orders:read", "orders:write"])
        #expect(
            c.headerValue
                == "Bearer realm=\"a\\\"p\\\\i\", error=\"insufficient_scope\", error_description=\"needs more\", scope=\"orders:read orders:write\""
        )
        #expect(
            Challenge(scheme: "DPoP", error: .use_dpop_nonce, algs: ["ES256", "EdDSA"]).headerValue
                == "DPoP algs=\"ES256 EdDSA\", error=\"use_dpop_nonce\"")
        #expect(OAuthErrorCode.invalid_request.status == 400)
        #expect(OAuthErrorCode.invalid_token.status == 401)
        #expect(OAuthErrorCode.insufficient_scope.status == 403)
    }
}
