import Testing

@testable import Gateway
@testable import Reactor

/// The gateway's own endpoints on built-in routes: each has a chain, as a configured route
/// has, that ends in the endpoint's own answer; `login.rate_limit` puts a limit per client
/// address in front of the login endpoints.
@Suite("Own routes: the gateway's endpoints on chains of their own")
struct OwnRoutesTests {
    static let limited = PipelineConfigs.yaml.replacingOccurrences(
        of: "upstreams:\n",
        with: """
            rate_limits:
              per-ip: { key: ip, rate: 1/d, burst: 1 }
              per-user: { key: sub, rate: 1/d, burst: 1 }
              per-header: { key: "header:X-Client", rate: 1/d, burst: 1 }
            login:
              rate_limit: per-ip
            upstreams:

            """)

    func request(_ w: Worker, _ target: String, fields: [(name: String, value: String)] = [])
        -> (RequestContext, InMemoryTransport)
    {
        let (ex, t) = InMemoryTransport.exchange("GET", target, fields: [("Host", "a")] + fields)
        w.metrics.inflight += 1
        ex.responder.observer = w
        let ctx = TrustEntry(services: w.services).context(ex, trusted: false, host: "a", start: 0)
        RouteEntry(services: w.services).run(ex, ctx, trusted: false, host: ("a", 1))
        return (ctx, t)
    }

    func names(_ plan: RoutePlan) -> [String] { plan.proxyStages.map { String(describing: type(of: $0)) } }

    @Test func theLoginRouteCountsItsLimitBeforeItsEndpointAnswers() throws {
        let w = try testWorker(Self.limited)
        #expect(
            names(w.services.requestPolicy.ownRoutes.login) == ["UpgradeStage", "RateLimitStage", "PublicRouteStage"])
        #expect(names(w.services.requestPolicy.ownRoutes.loginService) == ["UpgradeStage", "PublicRouteStage"])
        let (first, firstAnswer) = request(w, "/oauth2/start?client=nobody")
        #expect(first.route == "login" && firstAnswer.status != 429 && firstAnswer.status != 0)
        // The answer carries the limit's fields, as a proxied route's does.
        #expect(firstAnswer.head?.fields.first("RateLimit-Policy")?.contains("per-ip") == true)
        // The same client address again: refused by the route's limit, not answered by start.
        let (second, secondAnswer) = request(w, "/oauth2/logout")
        #expect(second.route == "login" && secondAnswer.status == 429)
        #expect(secondAnswer.head?.fields.first("Retry-After") != nil)
        #expect(second.state[RateLimitRefusal.Key.self]?.policy == "per-ip")
        // The endpoints the AS and upstreams call, from a few addresses for everyone, are not
        // counted: request objects, back-channel logouts and the keys still answer.
        for target in ["/oauth2/backchannel-logout", "/oauth2/request/" + String(repeating: "a", count: 43)] {
            let (ctx, t) = request(w, target)
            #expect(ctx.route == "login" && t.status != 429 && t.status != 0, "\(target): \(t.status)")
        }
    }

    @Test func withoutALimitTheLoginRouteIsItsEndpointsAlone() throws {
        let w = try testWorker(PipelineConfigs.yaml)
        #expect(names(w.services.requestPolicy.ownRoutes.login) == ["UpgradeStage", "PublicRouteStage"])
        for _ in 0..<3 {
            let (ctx, t) = request(w, "/oauth2/start?client=nobody")
            #expect(ctx.route == "login" && t.status != 429)
        }
    }

    @Test func anUpgradeToALoginEndpointIsRefused() throws {
        let w = try testWorker(PipelineConfigs.yaml)
        let (_, plain) = request(w, "/oauth2/logout")
        #expect(plain.status < 400, "logout answers a plain request: \(plain.status)")
        let (_, t) = request(
            w, "/oauth2/logout",
            fields: [
                ("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
            ])
        #expect(t.status >= 400 && t.status < 500, "status \(t.status)")
    }

    @Test func aLimitByCallerIsRefusedOnTheLoginEndpoints() {
        let yaml = Self.limited.replacingOccurrences(
            of: "rate_limit: per-ip", with: "rate_limit: [per-ip, per-user, per-header]")
        guard case .failure(let error) = ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
        else {
            Issue.record("a per-user limit on the login endpoints parsed")
            return
        }
        #expect(
            error.problems.map(\.description).contains {
                $0.contains("login.rate_limit") && $0.contains("\"per-user\" counts by sub")
            })
        // A header is the client's to vary: a new value each time would escape the limit.
        #expect(
            error.problems.map(\.description).contains {
                $0.contains("login.rate_limit") && $0.contains("\"per-header\" counts by header:X-Client")
            })
        let unknown = Self.limited.replacingOccurrences(of: "rate_limit: per-ip", with: "rate_limit: nobody")
        guard case .failure(let e2) = ConfigParser.parse(yaml: unknown, environment: [:], baseDirectory: "/", cores: 1)
        else {
            Issue.record("an undefined policy parsed")
            return
        }
        #expect(e2.problems.map(\.description).contains { $0.contains("\"nobody\" is not defined under rate_limits") })
    }

    @Test func withRedisTheLoginLimitNeedsSharedKeyNames() {
        let yaml = """
            listen: 127.0.0.1:1
            admin_listen: "off"
            store: redis://127.0.0.1:6379
            rate_limits:
              per-ip: { key: ip, rate: 1/s }
            login:
              rate_limit: per-ip
            upstreams:
              app: { url: "http://127.0.0.1:9" }
            routes:
              - { name: public, match: { path_prefix: / }, upstream: app, auth: none }
            """
        guard case .failure(let error) = ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
        else {
            Issue.record("a Redis-counted login limit without session.keys parsed")
            return
        }
        #expect(error.problems.map(\.description).contains { $0.contains("rate limits need session.keys") })
    }
}
