import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// DPoP towards an upstream: which answers are nonce challenges the gateway takes up (once),
/// which nonces it keeps, and which token types a login accepts.
@Suite("Upstream DPoP: nonces, the one retry, token types")
struct UpstreamDPoPTests {
    static let challenge = HTTP1Fields([
        ("WWW-Authenticate", #"DPoP error="use_dpop_nonce", algs="ES256""#), ("DPoP-Nonce", "n-1")
    ])

    func exchange(retry: Bool = true) -> (UpstreamDPoPExchange, UpstreamNonces) {
        let nonces = UpstreamNonces()
        let build = { UpstreamCall.Request(method: .GET, target: "/x", fields: HTTP1Fields(), body: nil) }
        return (UpstreamDPoPExchange(nonces: nonces, authority: "api:80", retry: retry ? build : nil), nonces)
    }

    @Test func aChallengeIsTakenUpOnceAndItsNonceKept() {
        let (e, nonces) = exchange()
        #expect(e.takesRetry(HTTPResponseHead(status: 401, fields: Self.challenge)) != nil)
        #expect(nonces.nonce(for: "api:80") == "n-1" && nonces.nonce(for: "other:80") == nil)
        #expect(e.takesRetry(HTTPResponseHead(status: 401, fields: Self.challenge)) == nil, "one retry only")
    }

    @Test func aDPoPChallengeBesideABearerOneIsTakenUp() {
        let (e, _) = exchange()
        let fields = HTTP1Fields([
            ("WWW-Authenticate", #"Bearer realm="api", DPoP error="use_dpop_nonce", algs="ES256""#),
            ("DPoP-Nonce", "n-3")
        ])
        #expect(e.takesRetry(HTTPResponseHead(status: 401, fields: fields)) != nil)
    }

    @Test func aRequestThatCannotGoTwiceLearnsTheNonceOnly() {
        let (e, nonces) = exchange(retry: false)
        #expect(e.takesRetry(HTTPResponseHead(status: 401, fields: Self.challenge)) == nil)
        #expect(nonces.nonce(for: "api:80") == "n-1")
    }

    @Test(arguments: [
        (200, [("DPoP-Nonce", "n-2")]),
        (401, [("WWW-Authenticate", #"DPoP error="invalid_token""#), ("DPoP-Nonce", "n-2")]),
        (401, [("WWW-Authenticate", #"Bearer error="use_dpop_nonce""#), ("DPoP-Nonce", "n-2")]),
        (403, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", "n-2")])
    ])
    func otherAnswersAreNoChallengeButTheirNonceIsKept(status: Int, fields: [(String, String)]) {
        let (e, nonces) = exchange()
        #expect(e.takesRetry(HTTPResponseHead(status: status, fields: HTTP1Fields(fields))) == nil)
        #expect(nonces.nonce(for: "api:80") == "n-2")
    }

    @Test func aChallengeWithoutAUsableNonceIsPassedOn() {
        for nonce in ["", "a b", "q\"uote", "back\\slash", String(repeating: "n", count: 513)] {
            let (e, nonces) = exchange()
            let fields = HTTP1Fields([
                ("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", nonce)
            ])
            #expect(e.takesRetry(HTTPResponseHead(status: 401, fields: fields)) == nil, "\(nonce.prefix(10))")
            #expect(nonces.nonce(for: "api:80") == nil)
        }
        let (e, _) = exchange()
        let fields = HTTP1Fields([("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#)])
        #expect(e.takesRetry(HTTPResponseHead(status: 401, fields: fields)) == nil)
    }

    @Test func onlyABodilessGetOrHeadMayGoTwice() {
        let get = HTTPRequestHead(methodName: "GET", target: "/x", version: (1, 1), fields: HTTP1Fields())
        let post = HTTPRequestHead(methodName: "POST", target: "/x", version: (1, 1), fields: HTTP1Fields())
        #expect(UpstreamDPoPExchange.mayRetry(get, body: BufferedRequestBody([])))
        #expect(!UpstreamDPoPExchange.mayRetry(get, body: BufferedRequestBody([1])))
        #expect(!UpstreamDPoPExchange.mayRetry(post, body: BufferedRequestBody([])))
    }

    @Test func theTokenTypeMustBeTheOneAskedForInAnyCase() throws {
        func response(_ type: String) throws -> TokenResponse {
            try TokenResponse.parse(
                status: 200, body: Array(#"{"access_token":"at","token_type":"\#(type)"}"#.utf8)
            ).get()
        }
        for type in ["DPoP", "dpop", "DPOP"] { #expect(try response(type).hasType(dpop: true)) }
        for type in ["Bearer", "bearer", "N_A", ""] { #expect(try !response(type).hasType(dpop: true)) }
        for type in ["Bearer", "bearer", "BEARER"] { #expect(try response(type).hasType(dpop: false)) }
        for type in ["DPoP", "mac"] { #expect(try !response(type).hasType(dpop: false)) }
    }
}
