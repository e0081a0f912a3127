import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// The Bearer admission a client connection keeps (`BearerMemo`): the same token again on the
/// same connection is admitted without another check, and everything the full path would
/// decide differently still gets the full path — a different token, a changed presentation,
/// a second credential, an expired token, the cache's ttl, new keys, a new config, another
/// route. Through the forward-auth endpoint on a manual clock, over one shared connection.
@Suite("Bearer admissions kept per connection")
struct BearerMemoTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        public_url: https://api.example
        decision: {}
        token_cache: { entries: 100, ttl: 120s }
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api], leeway: 5s }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
          - name: admin
            match: { path_prefix: /admin/ }
            upstream: app
            auth: bearer
            issuers: [one]
            require: { scopes: [admin] }
        """

    final class Harness {
        let clock = ManualClock()
        let worker: Worker
        var key: JWK
        /// One client connection for every request, unless a test makes another.
        var connection = ClientConnection(peer: "10.1.2.3", isTLS: false)

        init(yaml: String = BearerMemoTests.yaml) throws {
            worker = try testWorker(yaml, wallClock: clock)
            key = try JWK.generate(for: .ES256, kid: "k1")
            try publish(key)
        }

        func publish(_ key: JWK) throws { try publishIssuerKey(key, on: worker) }

        func token(sub: String = "alice", exp: Int64 = 3600, scope: String? = nil) throws -> String {
            try testAccessToken(
                key: key, now: clock.seconds, sub: sub, exp: exp, extra: scope.map { ["scope": .string($0)] } ?? [:])
        }

        /// Asks the forward-auth endpoint about `GET https://api.example<path>` on the
        /// harness's connection.
        func ask(_ path: String, _ fields: [(name: String, value: String)]) -> InMemoryTransport {
            askForwardAuth(worker, path, fields, connection: connection)
        }

        func bearer(_ token: String, path: String = "/api/x") -> InMemoryTransport {
            ask(path, [("Authorization", "Bearer \(token)")])
        }

        /// Verified-token cache lookups so far (hits + misses): the full path makes one.
        var lookups: Int { worker.tokens.cacheHits + worker.tokens.cacheMisses }
    }

    static func user(_ t: InMemoryTransport) -> String? { t.head?.fields.first("X-Forwarded-User") }
    static func challenge(_ t: InMemoryTransport) -> String { t.head?.fields.first("WWW-Authenticate") ?? "" }

    @Test func theSameTokenOnTheSameConnectionIsAdmittedAsBefore() throws {
        let h = try Harness()
        let token = try h.token()
        let first = h.bearer(token)
        #expect(first.status == 200 && Self.user(first) == "alice")
        #expect(h.lookups == 1)
        let again = h.bearer(token)
        #expect(again.status == 200 && Self.user(again) == "alice")
        #expect(h.lookups == 1, "admitted from the connection's memo, not looked up again")
        // Another connection has no memo of its own: the cache answers.
        h.connection = ClientConnection(peer: "10.1.2.3", isTLS: false)
        #expect(h.bearer(token).status == 200)
        #expect(h.lookups == 2 && h.worker.tokens.cacheHits == 1)
    }

    @Test func anotherTokenOnTheConnectionIsCheckedInFull() throws {
        let h = try Harness()
        #expect(h.bearer(try h.token()).status == 200)
        // Same length, same header, one byte off: a forgery next to a remembered token.
        var forged = Array(try h.token(sub: "mallory").utf8)
        forged[forged.count - 3] = forged[forged.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let refused = h.bearer(String(decoding: forged, as: UTF8.self))
        #expect(refused.status == 401 && Self.challenge(refused).contains("invalid_token"))
        let bob = h.bearer(try h.token(sub: "bob"))
        #expect(bob.status == 200 && Self.user(bob) == "bob")
    }

    @Test func theTokenPresentedAnotherWayIsCheckedInFull() throws {
        let h = try Harness()
        let token = try h.token()
        #expect(h.bearer(token).status == 200)
        #expect(h.lookups == 1)
        // The scheme in another case: the same credential (RFC 9110 §11.1), other bytes.
        #expect(h.ask("/api/x", [("Authorization", "bearer \(token)")]).status == 200)
        #expect(h.lookups == 2)
        // A second Authorization field: refused whatever the first one says (RFC 6750 §2).
        let twice = h.ask("/api/x", [("Authorization", "Bearer \(token)"), ("Authorization", "Bearer \(token)")])
        #expect(twice.status == 400 && Self.challenge(twice).contains("invalid_request"))
        // The token again in the query: more than one method (RFC 6750 §2), not accepted here.
        let query = h.ask("/api/x?access_token=\(token)", [("Authorization", "Bearer \(token)")])
        #expect(query.status == 400 && Self.challenge(query).contains("invalid_request"))
    }

    @Test func anExpiredTokenIsNotAdmittedFromTheMemo() throws {
        let h = try Harness()
        let token = try h.token(exp: 30)
        #expect(h.bearer(token).status == 200)
        h.clock.advance(36)  // past exp + leeway, within the cache's ttl
        let late = h.bearer(token)
        #expect(late.status == 401 && Self.challenge(late).contains("the token has expired"))
    }

    @Test func theMemoLastsNoLongerThanTheCache() throws {
        let h = try Harness()
        let token = try h.token()
        #expect(h.bearer(token).status == 200)
        h.clock.advance(119)
        #expect(h.bearer(token).status == 200)
        #expect(h.lookups == 1)
        h.clock.advance(2)  // past token_cache.ttl: verified again
        #expect(h.bearer(token).status == 200)
        #expect(h.worker.tokens.cacheMisses == 2)
    }

    @Test func newKeysAndANewConfigEndTheMemo() throws {
        let h = try Harness()
        let token = try h.token()
        #expect(h.bearer(token).status == 200)
        // The issuer rotates its key away: the remembered token's signature no longer verifies.
        try h.publish(try JWK.generate(for: .ES256, kid: "k2"))
        let rotated = h.bearer(token)
        #expect(rotated.status == 401 && Self.challenge(rotated).contains("invalid_token"))
        // A reload also starts over: the token is checked again under the new config.
        try h.publish(h.key)
        #expect(h.bearer(token).status == 200)
        h.worker.apply(h.worker.config)
        #expect(h.lookups == 0, "a new config has a new, empty cache")
        #expect(h.bearer(token).status == 200)
        #expect(h.lookups == 1, "checked again under the new config")
    }

    @Test func aMemoIsForItsRouteOnly() throws {
        let h = try Harness()
        let token = try h.token(scope: "read")
        #expect(h.bearer(token).status == 200)
        // The admin route wants a scope the token lacks: the memo of /api/ does not stand for it.
        let admin = h.bearer(token, path: "/admin/x")
        #expect(admin.status == 403 && Self.challenge(admin).contains("insufficient_scope"))
    }

    @Test func noMemoWithTheCacheOff() throws {
        let h = try Harness(yaml: Self.yaml.replacingOccurrences(of: "entries: 100", with: "entries: 0"))
        let token = try h.token()
        #expect(h.bearer(token).status == 200)
        #expect(h.bearer(token).status == 200)
        #expect(h.worker.tokens.cacheHits == 0)
        let memo = h.connection.context.map { unsafeDowncast($0, to: ConnectionMemo.self) }
        #expect(memo?.state[BearerMemo.Key.self] == nil)
    }
}
