import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// What a template route's variables become downstream: the request's `pathParameters` and
/// `routeTemplate`, and the identity headers mapped from them — per request, also when a
/// connection's memo admits the token again, and in a decision's verdict.
@Suite("Path parameters: on the request, in identity headers, in verdicts")
struct PathParametersStageTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        public_url: https://api.example
        decision: {}
        token_cache: { entries: 100, ttl: 120s }
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: order
            match: { path_template: "/orders/{order_id}/items/{item}" }
            upstream: app
            auth: bearer
            issuers: [one]
            headers: { X-User: sub, X-Order-Id: "{order_id}", X-Item: "{item}" }
          - name: files
            match: { path_template: "/files/{path*}" }
            upstream: app
            auth: none
          - name: rest
            match: { path_prefix: / }
            upstream: app
            auth: none
        """

    @Test func theRequestCarriesItsParametersAndTemplate() throws {
        let w = try testWorker(Self.yaml)
        let h = try StageHarness(w, "GET", "/orders/42/items/a%20b")
        #expect(h.request.pathParameters.list.map(\.name) == ["order_id", "item"])
        #expect(h.request.pathParameters["order_id"] == "42" && h.request.pathParameters["item"] == "a%20b")
        #expect(h.request.routeTemplate == "/orders/{order_id}/items/{item}")
        #expect(h.request.context.pathParameters == h.request.pathParameters)
        let files = try StageHarness(w, "GET", "/files/a/b%2Bc/")
        #expect(files.request.pathParameters["path"] == "a/b%2Bc/")
        let other = try StageHarness(w, "GET", "/orders/42")
        #expect(other.request.pathParameters.isEmpty && other.request.routeTemplate == nil)
    }

    @Test func identityHeadersCarryTheVariables() throws {
        let w = try testWorker(Self.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let token = try testAccessToken(key: key, now: Int64(Date().timeIntervalSince1970), sub: "alice")
        let h = try StageHarness(
            w, "GET", "/orders/7/items/x", fields: [("Host", "a"), ("Authorization", "Bearer " + token)])
        h.run(try #require(h.stage(TokenStage.self)))
        let identity = try #require(h.request.admission?.identity)
        #expect(identity.contains { $0 == ("X-Order-Id", "7") } && identity.contains { $0 == ("X-Item", "x") })
        #expect(identity.contains { $0 == ("X-User", "alice") })
    }

    /// The connection's memo keeps the claims' headers for the next request with the same
    /// token; the variables are the next request's own.
    @Test func aRememberedAdmissionTakesTheNewRequestsVariables() throws {
        let w = try testWorker(Self.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let token = try testAccessToken(key: key, now: Int64(Date().timeIntervalSince1970))
        let connection = ClientConnection(peer: "10.1.2.3", isTLS: false)
        let auth = [("Authorization", "Bearer \(token)")]
        let first = askForwardAuth(w, "/orders/1/items/a", auth, connection: connection)
        #expect(first.status == 200)
        #expect(first.head?.fields.first("X-Order-Id") == "1" && first.head?.fields.first("X-Item") == "a")
        let lookups = w.tokens.cacheHits + w.tokens.cacheMisses
        let second = askForwardAuth(w, "/orders/2/items/b", auth, connection: connection)
        #expect(second.status == 200)
        #expect(w.tokens.cacheHits + w.tokens.cacheMisses == lookups, "admitted from the connection's memo")
        #expect(second.head?.fields.first("X-Order-Id") == "2" && second.head?.fields.first("X-Item") == "b")
        #expect(second.head?.fields.first("X-Forwarded-User") == nil && second.head?.fields.first("X-User") == "alice")
    }

    /// A client's own copy of a variable's header never reaches the upstream: it is an identity
    /// header like the others.
    @Test func aClientSentVariableHeaderIsStripped() throws {
        let w = try testWorker(Self.yaml)
        #expect(w.services.config.strippedIdentityHeaders.contains(Array("x-order-id".utf8)))
        #expect(w.services.config.strippedIdentityHeaders.contains(Array("x-item".utf8)))
    }
}
