import Foundation
import JOSE
import TestSupport
import Testing

@testable import Gateway
@testable import Reactor

/// Both pending-login stores keep the same promises: a login's state counts once, only in the
/// browser that began it, and only within the login timeout; a store that cannot answer says
/// so (the callback fails closed) instead of "no such login".
@Suite("Pending login stores: the sealed cookie and Redis", .serialized)
struct PendingLoginStoreTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case cookie, redis
        var testDescription: String { rawValue }
    }

    static let cookieName = "tokengate_login"

    final class Harness {
        let loop = EventLoop()
        let store: PendingLoginStore
        let redis: RedisServerProcess?
        init(_ kind: Kind, timeout: Int64 = 600, max: Int = 5) throws {
            switch kind {
            case .cookie:
                redis = nil
                store = CookiePendingLogins(
                    sealer: SessionTests.sealer, cookieName: cookieName, secure: false, timeout: timeout, max: max)
            case .redis:
                let server = try RedisServerProcess()
                redis = server
                let endpoint = try #require(RedisEndpoint(url: "redis://127.0.0.1:\(server.port)/3"))
                store = RedisPendingLogins(
                    client: Redis(loop: loop, deployment: .standalone(endpoint)), prefix: "t:",
                    sealer: SessionTests.sealer,
                    cookieName: cookieName, secure: false, timeout: timeout, max: max)
            }
        }
        func run<T>(_ start: (@escaping (T) -> Void) -> Void) -> T? {
            var out: T?
            start { [loop] v in
                out = v
                loop.stop()
            }
            if out == nil {
                loop.schedule(after: 5) { [loop] in loop.stop() }
                loop.run()
            }
            return out
        }
        /// Begins a login in the browser whose cookies are `jar`; the jar after the response.
        func add(_ state: String, jar: [String: String] = [:], now: Int64 = 1000) -> Result<
            [String: String], SessionStoreError
        >? {
            let login = PendingLogins.Login(
                state: state, nonce: "nonce-\(state)", codeVerifier: "verifier-\(state)", returnTo: "/r/\(state)",
                client: "web", createdAt: now)
            return run { done in
                store.add(login, cookies: Self.cookies(jar), now: now) { done($0.map { Self.apply($0, to: jar) }) }
            }
        }
        func take(_ state: String, jar: [String: String], now: Int64 = 1001) -> Result<
            PendingLoginTake, SessionStoreError
        >? {
            run { done in store.take(state: state, cookies: Self.cookies(jar), now: now, done: done) }
        }
        /// The jar after beginning a login; nil when the store refused it.
        func begin(_ state: String, jar: [String: String] = [:], now: Int64 = 1000) -> [String: String]? {
            try? add(state, jar: jar, now: now)?.get()
        }
        /// What a callback's lookup found; nil when the store failed.
        func taken(_ state: String, jar: [String: String], now: Int64 = 1001) -> PendingLoginTake? {
            try? take(state, jar: jar, now: now)?.get()
        }
        static func cookies(_ jar: [String: String]) -> Cookies {
            Cookies(cookieHeaders: jar.isEmpty ? [] : [jar.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")])
        }
        /// What a browser keeps of `lines` (Set-Cookie).
        static func apply(_ lines: [String], to jar: [String: String]) -> [String: String] {
            var jar = jar
            for line in lines {
                let pair = line.prefix { $0 != ";" }
                guard let eq = pair.firstIndex(of: "=") else { continue }
                let name = String(pair[..<eq])
                let value = String(pair[pair.index(after: eq)...])
                jar[name] = line.contains("Max-Age=0") ? nil : value
            }
            return jar
        }
    }

    @Test(arguments: Kind.allCases) func aStateCountsOnceInItsBrowser(kind: Kind) throws {
        let h = try Harness(kind)
        var jar = try #require(h.begin("s1"))
        jar = try #require(h.begin("s2", jar: jar))  // a second tab
        let first = try #require(h.taken("s1", jar: jar))
        #expect(
            first.login?.codeVerifier == "verifier-s1" && first.login?.nonce == "nonce-s1"
                && first.login?.returnTo == "/r/s1")
        let afterFirst = Harness.apply(first.setCookies, to: jar)
        // Once: the same state again finds nothing — with the cookie as it is now, and (Redis)
        // with the cookie as it was (a replayed cookie).
        #expect(try #require(h.taken("s1", jar: afterFirst)).login == nil)
        if kind == .redis { #expect(try #require(h.taken("s1", jar: jar)).login == nil) }
        // The other tab's login is still there.
        #expect(try #require(h.taken("s2", jar: afterFirst)).login?.codeVerifier == "verifier-s2")
    }

    /// A code exchange that got no verdict (token endpoint down): the login goes back, and the
    /// same browser's reload of the callback finds it once more — and then only once.
    @Test(arguments: Kind.allCases) func aRestoredLoginIsFoundAgainOnce(kind: Kind) throws {
        let h = try Harness(kind)
        let jar = try #require(h.begin("s1"))
        let first = try #require(h.taken("s1", jar: jar))
        #expect(first.login?.codeVerifier == "verifier-s1")
        let restored = h.run { done in h.store.restore(first, now: 1002, done: done) }
        #expect((try? #require(restored).get()) != nil)
        // The caller sent none of the take's Set-Cookie: the browser's jar is as it was.
        let again = try #require(h.taken("s1", jar: jar, now: 1003))
        #expect(again.login?.codeVerifier == "verifier-s1" && again.login?.returnTo == "/r/s1")
        let afterSecond = Harness.apply(again.setCookies, to: jar)
        #expect(try #require(h.taken("s1", jar: afterSecond, now: 1004)).login == nil)
        // Another browser still finds nothing.
        let other = try #require(h.begin("other"))
        #expect(try #require(h.taken("s1", jar: other, now: 1005)).login == nil)
    }

    @Test(arguments: Kind.allCases) func anotherBrowserOrNoCookieFindsNothing(kind: Kind) throws {
        let h = try Harness(kind)
        let jar = try #require(h.begin("victim-state"))
        let other = try #require(h.begin("attacker-state"))
        // login CSRF: state into another browser
        #expect(try #require(h.taken("victim-state", jar: other)).login == nil)
        #expect(try #require(h.taken("victim-state", jar: [:])).login == nil)
        let value = try #require(jar[Self.cookieName])
        var tampered = Array(value)
        tampered[5] = tampered[5] == "A" ? "B" : "A"
        for bad in [String(tampered), "", "x", String(repeating: "A", count: 43), String(repeating: "A", count: 5000)] {
            #expect(try #require(h.taken("victim-state", jar: [Self.cookieName: bad])).login == nil)
        }
        #expect(try #require(h.taken("", jar: jar)).login == nil)
        #expect(try #require(h.taken(String(repeating: "s", count: 10_000), jar: jar)).login == nil)
        // None of that used it up.
        #expect(try #require(h.taken("victim-state", jar: jar)).login?.state == "victim-state")
    }

    @Test(arguments: Kind.allCases) func aLoginTimesOut(kind: Kind) throws {
        let h = try Harness(kind, timeout: 600)
        let jar = try #require(h.begin("late", now: 1000))
        #expect(try #require(h.taken("late", jar: jar, now: 1600)).login == nil)
    }

    @Test func redisKeepsOnlyAnIDInTheCookieAndNothingReadable() throws {
        let h = try Harness(.redis)
        let jar = try #require(h.begin("the-state"))
        let id = try #require(jar[Self.cookieName])
        #expect(RedisPendingLogins.isLoginID(Substring(id)))
        let raw = RedisClient(loop: h.loop, endpoint: RedisEndpoint(url: "redis://127.0.0.1:\(h.redis!.port)/3")!)
        let keys: RedisReply? = h.run { done in raw.send(["KEYS", "*"]) { done(try? $0.get()) } } ?? nil
        guard case .array(let list)? = keys, list.count == 1, case .bulk(let keyBytes) = list[0] else {
            Issue.record("one key expected: \(String(describing: keys))")
            return
        }
        let key = String(decoding: keyBytes, as: UTF8.self)
        #expect(key.hasPrefix("t:login-state:") && !key.contains(id) && !key.contains("the-state"))
        let ttl: RedisReply? = h.run { done in raw.send(["TTL", key]) { done(try? $0.get()) } } ?? nil
        guard case .integer(let seconds)? = ttl else {
            Issue.record("no TTL")
            return
        }
        #expect(seconds > 590 && seconds <= 600)
        let value: RedisReply? = h.run { done in raw.send(["GET", key]) { done(try? $0.get()) } } ?? nil
        guard case .bulk(let stored)? = value else {
            Issue.record("no value")
            return
        }
        let text = String(decoding: stored, as: UTF8.self)
        #expect(
            !text.contains("verifier-the-state") && !text.contains("nonce-the-state") && !text.contains("/r/the-state"))
    }

    /// The seal is bound to the key: two browsers begin logins with the same state (so the
    /// state check alone cannot tell them apart); one's value copied under the other's key
    /// does not open.
    @Test func redisValueMovedToAnotherKeyDoesNotOpen() throws {
        let h = try Harness(.redis)
        let x = try #require(h.begin("same-state"))
        let y = try #require(h.begin("same-state"))
        let raw = RedisClient(loop: h.loop, endpoint: RedisEndpoint(url: "redis://127.0.0.1:\(h.redis!.port)/3")!)
        func key(_ jar: [String: String]) throws -> String {
            "t:login-state:" + RedisPendingLogins.digest(id: try #require(jar[Self.cookieName]), state: "same-state")
        }
        let value: RedisReply? = h.run { done in raw.send(["GET", try! key(x)]) { done(try? $0.get()) } } ?? nil
        guard case .bulk(let stored)? = value else {
            Issue.record("no value")
            return
        }
        let moved: RedisReply? =
            h.run { done in
                raw.send(["SET", try! key(y), String(decoding: stored, as: UTF8.self)]) { done(try? $0.get()) }
            } ?? nil
        #expect(moved == .status("OK"))
        #expect(try #require(h.taken("same-state", jar: y)).login == nil)
        // the original still opens where it was
        #expect(try #require(h.taken("same-state", jar: x)).login?.state == "same-state")
    }

    /// A login-state cookie someone planted (a sibling subdomain, an http:// origin without
    /// the __Host- prefix) is never the id of a new login: knowing it gains nothing. The
    /// cookie holds at most `max` pending logins; a used one leaves it.
    @Test func aPlantedIDIsNeverUsedAndTheCookieIsBounded() throws {
        let h = try Harness(.redis)
        let planted = Base64URL.encode(Array(repeating: 7, count: 32))
        var jar = try #require(h.begin("victim", jar: [Self.cookieName: planted]))
        #expect(jar[Self.cookieName] != planted && jar[Self.cookieName]!.hasPrefix(planted + "."))
        #expect(try #require(h.taken("victim", jar: [Self.cookieName: planted])).login == nil)
        for i in 0..<6 { jar = try #require(h.begin("tab\(i)", jar: jar)) }
        #expect(jar[Self.cookieName]!.split(separator: ".").count == 5)
        #expect(try #require(h.taken("victim", jar: jar)).login == nil)  // pushed out by newer ones
        let used = try #require(h.taken("tab5", jar: jar))
        #expect(used.login?.state == "tab5")
        let after = Harness.apply(used.setCookies, to: jar)
        #expect(after[Self.cookieName]!.split(separator: ".").count == 4)
        #expect(try #require(h.taken("tab4", jar: after)).login?.state == "tab4")
    }

    /// The most pending logins the config allows (20) all stay reachable.
    @Test func twentyPendingLoginsFitTheCookie() throws {
        let h = try Harness(.redis, max: 20)
        var jar: [String: String] = [:]
        for i in 0..<20 { jar = try #require(h.begin("s\(i)", jar: jar)) }
        #expect(jar[Self.cookieName]!.split(separator: ".").count == 20)
        #expect(try #require(h.taken("s0", jar: jar)).login?.state == "s0")
    }

    @Test func redisDownFailsClosed() throws {
        let h = try Harness(.redis)
        let jar = try #require(h.begin("s"))
        h.redis?.kill()
        guard case .failure? = h.take("s", jar: jar) else {
            Issue.record("a dead Redis must be an error, not 'no such login'")
            return
        }
        guard case .failure? = h.add("t", jar: jar) else {
            Issue.record("a login must not begin when its state cannot be kept")
            return
        }
    }

    /// Pending logins in the cookie, sessions in Redis: with Redis down no login begins (the
    /// session it leads to could not be stored), and one begun before still finishes its take.
    @Test func cookiePendingLoginsWaitForTheSessionStore() throws {
        let server = try RedisServerProcess()
        let loop = EventLoop()
        let endpoint = try #require(RedisEndpoint(url: "redis://127.0.0.1:\(server.port)/3"))
        let store = StoreCheckedPendingLogins(
            CookiePendingLogins(
                sealer: SessionTests.sealer, cookieName: Self.cookieName, secure: false, timeout: 600, max: 5),
            sessionStore: Redis(loop: loop, deployment: .standalone(endpoint)))
        func run<T>(_ start: (@escaping (T) -> Void) -> Void) -> T? {
            var out: T?
            start { v in
                out = v
                loop.stop()
            }
            if out == nil {
                loop.schedule(after: 5) { loop.stop() }
                loop.run()
            }
            return out
        }
        let login = PendingLogins.Login(
            state: "s", nonce: "n", codeVerifier: "v", returnTo: "/r", client: "web", createdAt: 1000)
        let added = try #require(
            run { done in store.add(login, cookies: Cookies(cookieHeaders: []), now: 1000, done: done) })
        let lines = try added.get()
        let jar = Harness.apply(lines, to: [:])
        server.kill()
        let refused: Result<[String], SessionStoreError>? = run { done in
            store.add(login, cookies: Cookies(cookieHeaders: []), now: 1001, done: done)
        }
        guard case .failure? = refused else {
            Issue.record("a login must not begin while the session store does not answer")
            return
        }
        let taken = run { done in store.take(state: "s", cookies: Harness.cookies(jar), now: 1002, done: done) }
        #expect((try? #require(taken).get())?.login?.codeVerifier == "v")
    }
}
