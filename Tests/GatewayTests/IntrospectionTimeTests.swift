import Foundation
import Testing

@testable import Gateway
@testable import Reactor

/// The introspection cache's time rules (RFC 7662 answers), driven by a manual clock through a
/// worker's decision endpoint, with the AS an in-process fake on the worker's loop: an active
/// answer is reused until min(`exp`, `cache_ttl`), an inactive one for `negative_ttl`; after
/// that the AS is asked again.
@Suite("Introspection cache with a manual clock", .serialized)
struct IntrospectionTimeTests {
    static func yaml(endpoint: String) -> String {
        """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        decision: {}
        issuers:
          as:
            issuer: "http://as.example"
            jwks_file: /dev/null
            audiences: [api]
            introspection: { client: gw, endpoint: "\(endpoint)", cache_ttl: 60s, negative_ttl: 10s }
        clients:
          gw: { client_id: gw, auth: client_secret_basic, secret: "0123456789abcdef0123456789abcdef" }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [as]
        """
    }

    final class Harness {
        let clock = ManualClock()
        let worker: Worker
        let idp: FakeAuthorizationServer

        init() throws {
            worker = try testWorker(IntrospectionTimeTests.yaml(endpoint: "http://127.0.0.1:9/"), wallClock: clock)
            idp = try FakeAuthorizationServer(loop: worker.loop)
            let config = try ConfigParser.parse(
                yaml: IntrospectionTimeTests.yaml(endpoint: "\(idp.url)/introspect"), environment: [:],
                baseDirectory: "/", cores: 1
            ).get()
            worker.apply(config)
        }

        var now: Int64 { clock.seconds }

        func answer(active: Bool, exp: Int64 = 3600) {
            idp.answers["/introspect"] = (
                200,
                active
                    ? #"{"active":true,"iss":"http://as.example","aud":"api","sub":"alice","exp":\#(now + exp)}"#
                    : #"{"active":false}"#
            )
        }

        func ask(_ token: String) -> InMemoryTransport {
            let (exchange, t) = InMemoryTransport.exchange(
                "GET", "/_tokengate/forward-auth",
                fields: [
                    ("Host", "tokengate"), ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", "https"),
                    ("X-Forwarded-Host", "api.example"), ("X-Forwarded-Uri", "/api/x"),
                    ("Authorization", "Bearer \(token)")
                ], peer: "10.1.2.3")
            worker.handle(exchange)
            if !t.ended { worker.loop.run { t.ended } }
            return t
        }

        var asked: Int { idp.hits("/introspect") }
    }

    @Test func activeAnswersAreReusedForCacheTTL() throws {
        let h = try Harness()
        h.answer(active: true)
        #expect(h.ask("opaque-1").status == 200 && h.asked == 1)
        #expect(h.idp.requests.first?.body.contains("token=opaque-1") == true)
        h.clock.advance(59)
        #expect(h.ask("opaque-1").status == 200 && h.asked == 1, "within cache_ttl: from the cache")
        h.clock.advance(1)
        h.answer(active: false)  // revoked meanwhile: seen once the cached answer is gone
        let revoked = h.ask("opaque-1")
        #expect(revoked.status == 401 && h.asked == 2)
        #expect(revoked.head?.fields.first("WWW-Authenticate")?.contains("invalid_token") == true)
    }

    @Test func anActiveAnswerIsNotReusedPastTheTokensExp() throws {
        let h = try Harness()
        h.answer(active: true, exp: 20)
        #expect(h.ask("opaque-2").status == 200 && h.asked == 1)
        h.clock.advance(19)
        #expect(h.ask("opaque-2").status == 200 && h.asked == 1)
        h.clock.advance(1)  // exp, well inside cache_ttl
        #expect(h.ask("opaque-2").status == 200 && h.asked == 2, "asked again at exp")
    }

    @Test func inactiveAnswersAreReusedForNegativeTTL() throws {
        let h = try Harness()
        h.answer(active: false)
        #expect(h.ask("opaque-3").status == 401 && h.asked == 1)
        h.clock.advance(9)
        h.answer(active: true)
        #expect(h.ask("opaque-3").status == 401 && h.asked == 1, "within negative_ttl: from the cache")
        h.clock.advance(1)
        #expect(h.ask("opaque-3").status == 200 && h.asked == 2)
    }
}
