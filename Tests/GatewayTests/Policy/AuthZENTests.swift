import Foundation
import JOSE
import Reactor
import Testing

@testable import Gateway

/// The AuthZEN messages (OpenID AuthZEN Authorization API 1.0 §5–§7): what is sent, what is
/// a decision, and the key the decision cache files it under.
@Suite("Policy: AuthZEN messages")
struct AuthZENMessageTests {
    static func evaluation(sub: String = "alice", method: String = "GET", ip: String = "10.0.0.1", time: Double = 0)
        -> AuthZENEvaluation
    {
        AuthZENEvaluation(
            subjectType: "identity", subjectID: sub, action: method, resourceID: "/orders/42", ip: ip, time: time)
    }

    @Test func theBodyHasTheFourMembersInOrder() throws {
        let e = Self.evaluation(time: 1_764_321_243)
        let text = String(decoding: e.body, as: UTF8.self)
        #expect(
            text
                == #"{"subject":{"type":"identity","id":"alice"},"action":{"name":"GET"},"#
                + #""resource":{"type":"route","id":"/orders/42"},"#
                + #""context":{"ip_address":"10.0.0.1","time":"2025-11-28T09:14:03Z"}}"#)
    }

    @Test func theKeyFollowsWhatDecidesAndNotTheTime() {
        let base = Self.evaluation().key
        #expect(Self.evaluation(time: 999).key == base)
        #expect(Self.evaluation(sub: "bob").key != base)
        #expect(Self.evaluation(method: "DELETE").key != base)
        #expect(Self.evaluation(ip: "10.0.0.2").key != base)
    }

    @Test func aBatchSharesItsDefaultsAndNamesEachResource() throws {
        let body = AuthZENEvaluation.batchBody(
            Self.evaluation(),
            resources: [
                JSONObject(["type": .string("tool"), "id": .string("a")]),
                JSONObject(["type": .string("tool"), "id": .string("b")])
            ])
        let o = try #require(try JSONParser.parse(body).object)
        #expect(o["subject"]?.object?["id"]?.string == "alice")
        #expect(o["evaluations"]?.array?.count == 2)
        #expect(o["evaluations"]?.array?[1].object?["resource"]?.object?["id"]?.string == "b")
    }

    @Test func onlyABooleanDecisionIsADecision() throws {
        func parse(_ s: String, status: Int = 200) -> Result<AuthZENDecision, AuthZENError> {
            AuthZENDecision.parse(status: status, body: Array(s.utf8))
        }
        #expect(try parse(#"{"decision":true}"#).get().allowed)
        #expect(try !parse(#"{"decision":false}"#).get().allowed)
        #expect(parse(#"{"decision":"true"}"#) == .failure(.unusable("no boolean decision")))
        #expect(parse(#"{"decision":1}"#) == .failure(.unusable("no boolean decision")))
        #expect(parse(#"{}"#) == .failure(.unusable("no boolean decision")))
        #expect(parse(#"[true]"#) == .failure(.unusable("no boolean decision")))
        #expect(parse("not json") == .failure(.unusable("not JSON")))
        #expect(parse(#"{"decision":true}"#, status: 201) == .failure(.status(201)))
        #expect(parse(#"{"decision":true}"#, status: 500) == .failure(.status(500)))
    }

    @Test func reasonsAreStringsOrByLanguageAndCleaned() throws {
        let d = try AuthZENDecision.parse(
            status: 200,
            body: Array(
                #"{"decision":false,"context":{"reason_user":{"es-403":"No","en-403":"Only the owner"},"reason_admin":"rule \"7\"\nmatched"}}"#
                    .utf8)
        ).get()
        #expect(d.reasonUser == "Only the owner")
        // Quotes and control characters go: the text may end up in a header.
        #expect(d.reasonAdmin == "rule 7matched")
        let long = String(repeating: "x", count: 500)
        #expect(AuthZENDecision.reason(.string(long))?.count == 200)
        #expect(AuthZENDecision.reason(.object(JSONObject(["fr": .string("Non")]))) == "Non")
        #expect(AuthZENDecision.reason(.number("3")) == nil)
    }

    @Test func aBatchAnswerHasOneDecisionPerEvaluation() {
        func parse(_ s: String, count: Int) -> Result<[AuthZENDecision], AuthZENError> {
            AuthZENDecision.parseBatch(status: 200, body: Array(s.utf8), count: count)
        }
        #expect(
            (try? parse(#"{"evaluations":[{"decision":true},{"decision":false}]}"#, count: 2).get().map(\.allowed)) == [
                true, false
            ])
        #expect((try? parse(#"{"evaluations":[{"decision":true}]}"#, count: 2).get()) == nil)
        #expect((try? parse(#"{"evaluations":[{"decision":true},{"decision":"no"}]}"#, count: 2).get()) == nil)
        #expect((try? parse(#"{"decision":true}"#, count: 1).get()) == nil)
    }
}

/// The process's decision cache: kept by TTL, errors never, one leader per question.
@Suite("Policy: the decision cache")
struct PolicyDecisionCacheTests {
    func k(_ s: String) -> DecisionKey { DecisionKey(Digest.sha256.hash(Array(s.utf8))) }

    let loop = EventLoop()
    let settings = AuthorizerCache(allowTTL: 10, denyTTL: 2, maxEntries: 3)

    @Test func aLeaderThenWaitersThenHitsUntilTheTTL() {
        let cache = PolicyDecisionCache()
        var waited: [Bool] = []
        guard case .leader = cache.join(k("q"), loop: loop, now: 0, done: { _ in }) else {
            Issue.record("the first asker leads")
            return
        }
        guard
            case .waiting = cache.join(
                k("q"), loop: loop, now: 0, done: { r in waited.append((try? r.get())?.allowed ?? false) })
        else {
            Issue.record("a second asker waits")
            return
        }
        cache.finish(k("q"), .success(AuthZENDecision(allowed: true)), cache: settings, now: 0)
        loop.schedule(after: 0.05) { loop.stop() }
        loop.run()
        #expect(waited == [true])
        guard case .hit(let d, let until) = cache.join(k("q"), loop: loop, now: 9.9, done: { _ in }) else {
            Issue.record("kept within allow_ttl")
            return
        }
        #expect(d.allowed)
        #expect(until == 10)
        guard case .leader = cache.join(k("q"), loop: loop, now: 10.1, done: { _ in }) else {
            Issue.record("asked again after allow_ttl")
            return
        }
        #expect(cache.calls == 2)
    }

    @Test func aDenyIsKeptForItsOwnTTLAndAnErrorNotAtAll() {
        let cache = PolicyDecisionCache()
        _ = cache.join(k("d"), loop: loop, now: 0, done: { _ in })
        cache.finish(k("d"), .success(AuthZENDecision(allowed: false)), cache: settings, now: 0)
        if case .hit = cache.join(k("d"), loop: loop, now: 1.9, done: { _ in }) {} else { Issue.record("deny kept") }
        if case .leader = cache.join(k("d"), loop: loop, now: 2.1, done: { _ in }) {
        } else {
            Issue.record("deny expired")
        }
        cache.finish(k("d"), .failure(.status(500)), cache: settings, now: 2.1)
        if case .leader = cache.join(k("d"), loop: loop, now: 2.2, done: { _ in }) {
        } else {
            Issue.record("error not kept")
        }
    }

    @Test func aKeptDecisionAnswersOnlyItsOwnQuestionAndOnlyUntilItsEntryEnds() {
        let kept = KeptDecision(
            authorizer: "pdp", method: "GET", host: "api.example", path: "/orders/1", query: nil, ip: "192.0.2.1",
            decision: AuthZENDecision(allowed: true), until: 10)
        func answers(
            _ authorizer: String = "pdp", _ method: String = "GET", _ host: String = "api.example",
            _ path: String = "/orders/1", _ ip: String = "192.0.2.1", now: Double = 9.9
        ) -> Bool {
            kept.answers(authorizer: authorizer, method: method, host: host, path: path, query: nil, ip: ip, now: now)
        }
        #expect(answers())
        #expect(!answers(now: 10), "the cache's entry has ended")
        #expect(!answers("other"))
        #expect(!answers("pdp", "DELETE"))
        #expect(!answers("pdp", "GET", "evil.example"))
        #expect(!answers("pdp", "GET", "api.example", "/orders/2"))
        #expect(!answers("pdp", "GET", "api.example", "/orders/1", "192.0.2.2"))
        // With `query: true` the query is part of the question.
        let withQuery = KeptDecision(
            authorizer: "pdp", method: "GET", host: "api.example", path: "/orders/1", query: "", ip: "192.0.2.1",
            decision: AuthZENDecision(allowed: true), until: 10)
        func asked(_ query: String?) -> Bool {
            withQuery.answers(
                authorizer: "pdp", method: "GET", host: "api.example", path: "/orders/1", query: query,
                ip: "192.0.2.1", now: 1)
        }
        #expect(asked(""))
        #expect(!asked("action=delete"))
        #expect(!asked(nil))
    }

    @Test func itHoldsNoMoreThanMaxEntries() {
        let cache = PolicyDecisionCache()
        for i in 0..<10 {
            _ = cache.join(k("k\(i)"), loop: loop, now: 0, done: { _ in })
            cache.finish(k("k\(i)"), .success(AuthZENDecision(allowed: true)), cache: settings, now: 0)
        }
        #expect(cache.count <= 3)
        let none = AuthorizerCache(allowTTL: 10, denyTTL: 2, maxEntries: 0)
        _ = cache.join(k("z"), loop: loop, now: 0, done: { _ in })
        cache.finish(k("z"), .success(AuthZENDecision(allowed: true)), cache: none, now: 0)
        if case .leader = cache.join(k("z"), loop: loop, now: 0, done: { _ in }) {
        } else {
            Issue.record("max_entries 0 keeps nothing")
        }
    }
}

/// `authorizers:` and a route's `authorize`, and what check-config refuses.
@Suite("Policy: the config")
struct AuthorizerConfigTests {
    static func yaml(_ authorizers: String, route: String = "authorize: pdp", auth: String = "auth: bearer") -> String {
        """
        listen: 127.0.0.1:8080
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        authorizers:
        \(authorizers)
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            \(auth)
            issuers: [one]
            \(route)
        """
    }

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
    }

    func problems(_ yaml: String) -> [String] {
        if case .failure(let e) = parse(yaml) { return e.problems.map(\.description) }
        return []
    }

    @Test func anAuthorizerIsReadWithItsDefaults() throws {
        let cfg = try parse(Self.yaml("  pdp: { url: \"https://pdp.internal\" }")).get()
        let a = try #require(cfg.authorizers["pdp"])
        #expect(a.url == "https://pdp.internal/")
        #expect(a.evaluationURL == "https://pdp.internal/access/v1/evaluation")
        #expect(a.timeout == 0.3 && a.onError == .deny && a.auth == .none)
        #expect(a.cache == AuthorizerCache(allowTTL: 10, denyTTL: 2, maxEntries: 100_000))
        #expect(a.subject == AuthorizerSubject(type: "identity", idClaim: "sub", properties: []))
        #expect(cfg.routes[0].options.settings[AuthorizeStage.Settings.self]?.name == "pdp")
    }

    @Test func everySettingIsRead() throws {
        let cfg = try parse(
            Self.yaml(
                """
                  pdp:
                    url: "http://pdp:8080/base/"
                    timeout: 150ms
                    on_error: unavailable
                    cache: { allow_ttl: 1m, deny_ttl: 0s, max_entries: 5 }
                    subject: { type: user, id: email, properties: [groups, client_id] }
                """)
        ).get()
        let a = try #require(cfg.authorizers["pdp"])
        #expect(a.url == "http://pdp:8080/base/" && a.timeout == 0.15 && a.onError == .unavailable)
        #expect(a.cache == AuthorizerCache(allowTTL: 60, denyTTL: 0, maxEntries: 5))
        #expect(a.subject == AuthorizerSubject(type: "user", idClaim: "email", properties: ["groups", "client_id"]))
    }

    @Test(arguments: [
        (
            Self.yaml("  pdp: { url: \"https://pdp\" }", route: "authorize: other"),
            "\"other\" is not defined under authorizers"
        ),
        (Self.yaml("  pdp: { url: \"https://pdp\" }", auth: "auth: none"), "needs an authenticated caller"),
        (Self.yaml("  pdp: { timeout: 1s }"), "is required: the PDP's base URL"),
        (Self.yaml("  pdp: { url: \"file:///etc/passwd\" }"), "must be an http or https URL"),
        (Self.yaml("  pdp: { url: \"https://pdp/?x=1\" }"), "no query or fragment"),
        (Self.yaml("  pdp: { url: \"https://pdp\", timeout: 0s }"), "must be above 0 and at most 10s"),
        (Self.yaml("  pdp: { url: \"https://pdp\", on_error: allow }"), "must be deny or unavailable"),
        (Self.yaml("  pdp: { url: \"https://pdp\", auth: basic }"), "must be none or a mapping"),
        (Self.yaml("  pdp: { url: \"https://pdp\", auth: { bearer_file: /nonexistent/token } }"), "cannot read"),
        (Self.yaml("  pdp: { url: \"https://pdp\", cache: { max_entries: -1 } }"), "must be 0 to 10000000"),
        (Self.yaml("  pdp: { url: \"https://pdp\", subject: { id: \"\" } }"), "must not be empty"),
        (Self.yaml("  pdp: { url: \"https://pdp\", sujbect: {} }"), "sujbect")
    ])
    func checkConfigRefuses(_ yaml: String, _ message: String) {
        let found = problems(yaml)
        #expect(found.contains { $0.contains(message) }, "\(message) in \(found)")
    }
}

/// AuthZEN §9 metadata may name the PDP's endpoints, but only on `url`'s own origin: the calls
/// carry the gateway's credential, which an endpoint elsewhere would receive.
@Suite("PDP metadata endpoints: the same origin as url")
struct PDPMetadataOriginTests {
    static let url = "https://pdp.example:8443/authzen"

    @Test func theSameOriginIsTaken() {
        #expect(PDPClient.sameOrigin("https://pdp.example:8443/access/v1/evaluation", as: Self.url))
        #expect(PDPClient.sameOrigin("https://pdp.example:8443/other/evaluations", as: Self.url))
    }

    @Test(arguments: [
        "https://pdp.example:9443/access/v1/evaluation",  // another port
        "https://pdp.example/access/v1/evaluation",  // the default port is another port
        "https://attacker.example:8443/access/v1/evaluation",  // another host
        "https://pdp.example.attacker.example:8443/x",  // a host that only starts the same
        "http://pdp.example:8443/access/v1/evaluation",  // another scheme
        "/access/v1/evaluation",  // no host
        "not a url at all"
    ])
    func anotherOriginIsNot(_ endpoint: String) {
        #expect(!PDPClient.sameOrigin(endpoint, as: Self.url))
    }

    @Test func nothingNamedIsNothingTaken() {
        #expect(!PDPClient.sameOrigin(nil, as: Self.url))
    }
}

/// The gateway's own client-credentials token (RFC 6749 §5.1: `expires_in` is only
/// recommended): held for a short default when the AS says nothing usable, and never for
/// longer than a day whatever it says.
@Suite("Client credentials token: expires_in clamped")
struct ClientCredentialsLifetimeTests {
    @Test(arguments: [nil, 0, -1, Int64.min] as [Int64?])
    func aMissingOrNonPositiveExpiresInIsTheShortDefault(_ given: Int64?) {
        #expect(ClientCredentialsToken.heldFor(expiresIn: given) == 30)
        #expect(ClientCredentialsToken.heldFor(expiresIn: given) > 0)
    }

    @Test func aHugeExpiresInIsCappedAtADay() {
        #expect(ClientCredentialsToken.heldFor(expiresIn: Int64.max) == 86_400 - 30)
        #expect(ClientCredentialsToken.heldFor(expiresIn: 10 * 365 * 86_400) == 86_400 - 30)
    }

    @Test func anOrdinaryExpiresInIsKeptUntil30SecondsBefore() {
        #expect(ClientCredentialsToken.heldFor(expiresIn: 3600) == 3570)
        #expect(ClientCredentialsToken.heldFor(expiresIn: 40) == 20)
    }
}
