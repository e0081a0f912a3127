import Foundation
import JOSE
import TestSupport
import Testing

@testable import Gateway
@testable import Reactor

@Suite("Sessions: encoding, sealing, cookies, pending logins")
struct SessionTests {
    static let idToken = try! JWSSigner.sign(
        claims: JSONObject(["sub": .string("alice"), "email": .string("a@example.com")]), alg: .ES256,
        key: try! JWK.generate(for: .ES256, kid: "k"))
    static func session(refresh: String? = "Z0FBQUFBQnJBOVpvSmhNSHV3Y0VwSkU4", access: String? = nil) -> Session {
        Session(
            id: Session.newID(), client: "web", subject: "alice",
            claims: JSONObject(["email": .string("a@example.com"), "groups": .array([.string("dev")])]),
            idToken: idToken, accessToken: access, refreshToken: refresh, accessExpiresAt: 1_700_000_300,
            createdAt: 1_700_000_000, lastSeenAt: 1_700_000_100)
    }
    static let sealer = CookieSealer(keys: [AEADKey(secret: Array(repeating: 1, count: 32))!])

    @Test func encodingRoundTripsAndPacksTokens() {
        for s in [
            Self.session(), Self.session(refresh: nil, access: "opaque token with spaces"),
            Self.session(refresh: "a.b.c")
        ] {
            let bytes = s.encoded()!
            #expect(Session(encoded: bytes) == s)
        }
        // A JWT is kept as its raw bytes: a quarter smaller than its text.
        let s = Self.session()
        #expect(s.encoded()!.count < Self.idToken.utf8.count + 200)
        // A field past 64 KiB is refused, not stored (and never traps).
        #expect(Self.session(refresh: String(repeating: "a b", count: 25_000)).encoded()?.count == nil)
    }

    /// Review finding 7: the stale-userinfo mark survives sealing; sessions sealed without it
    /// decode unchanged; a trailing field that is not a number is refused.
    @Test func userinfoStaleMarkRoundTrips() {
        let original = Self.session()
        var s = original
        let plain = s.encoded()!
        s.userinfoStaleSince = 1_700_000_000
        let marked = s.encoded()!
        #expect(marked.count == plain.count + 11)
        #expect(Session(encoded: marked)?.userinfoStaleSince == 1_700_000_000)
        #expect(Session(encoded: plain)?.userinfoStaleSince == nil && Session(encoded: plain) == original)
        #expect(Session(encoded: plain + [1, 0, 1, 0x41]) == nil)
        #expect(Session(encoded: marked + [0]) == nil)
    }

    /// The last refresh's time survives sealing, with or without the stale mark before it.
    @Test func theRefreshTimeRoundTrips() {
        var s = Self.session()
        s.refreshedAt = 1_700_000_100
        #expect(Session(encoded: s.encoded()!) == s)
        s.userinfoStaleSince = 1_700_000_000
        #expect(Session(encoded: s.encoded()!) == s)
        s.refreshedAt = nil
        #expect(Session(encoded: s.encoded()!) == s)
    }

    @Test func corruptEncodingsAreRefused() {
        let good = Self.session().encoded()!
        #expect(Session(encoded: []) == nil)
        #expect(Session(encoded: [9] + good.dropFirst()) == nil)
        #expect(Session(encoded: Array(good.dropLast())) == nil)
        #expect(Session(encoded: good + [0]) == nil)
        // any single changed length or kind byte: nil or a session, never a crash
        for i in stride(from: 1, to: good.count, by: 7) {
            var b = good
            b[i] ^= 0xff
            _ = Session(encoded: b)
        }
    }

    @Test func sealingIsBoundToKeyAndPurpose() {
        let plain = Self.session().encoded()!
        let sealed = Self.sealer.seal(plain, purpose: "session")
        #expect(Self.sealer.open(sealed, purpose: "session") == plain)
        #expect(Self.sealer.open(sealed, purpose: "login-state") == nil)  // one kind of cookie is never another
        var raw = Base64URL.decode(sealed)!
        raw[20] ^= 1
        #expect(Self.sealer.open(Base64URL.encode(raw), purpose: "session") == nil)  // tampered
        #expect(Self.sealer.open(String(sealed.dropLast(2)), purpose: "session") == nil)  // truncated
        let other = CookieSealer(keys: [AEADKey(secret: Array(repeating: 2, count: 32))!])
        #expect(other.open(sealed, purpose: "session") == nil)  // another key
        // Rotation: the new key first, the old one still opens.
        let rotated = CookieSealer(keys: [
            AEADKey(secret: Array(repeating: 2, count: 32))!, AEADKey(secret: Array(repeating: 1, count: 32))!
        ])
        #expect(rotated.open(sealed, purpose: "session") == plain)
        #expect(Self.sealer.open(rotated.seal(plain, purpose: "session"), purpose: "session") == nil)
        // Every seal is different (random nonce).
        #expect(Self.sealer.seal(plain, purpose: "session") != sealed)
    }

    /// The opened-session cache hashes only a sealed value's length and tail: a forged value
    /// that shares both with an opened one must still be opened (and refused) on its own,
    /// never served the other's session.
    @Test func openedSessionCacheMatchesWholeValues() throws {
        let store = CookieSessionStore(sealer: Self.sealer, ended: EndedSessions(), wallClock: SystemClock())
        let session = Self.session()
        let sealed = Self.sealer.seal(session.encoded()!, purpose: CookieSessionStore.purpose)
        var first: SessionLookup?
        store.load(sealed) { first = $0 }
        guard case .found(let opened)? = first, opened == session else {
            Issue.record("the genuine cookie must open: \(String(describing: first))")
            return
        }
        let forged = String(repeating: "A", count: sealed.utf8.count - 32) + String(sealed.suffix(32))
        #expect(forged != sealed && forged.utf8.count == sealed.utf8.count)
        #expect(SealedValue(forged).hashValue == SealedValue(sealed).hashValue)
        var second: SessionLookup?
        store.load(forged) { second = $0 }
        guard case .none? = second else {
            Issue.record("a forged value sharing the tail must not hit the cache: \(String(describing: second))")
            return
        }
    }

    @Test func typicalSessionFitsOneCookie() {
        let sealed = Self.sealer.seal(Self.session().encoded()!, purpose: "session")
        #expect(sealed.utf8.count < Cookies.chunkSize)
    }

    @Test func pendingLoginsAreBoundedAndSingleUse() {
        var p = PendingLogins()
        for i in 0..<8 {
            p.add(
                .init(
                    state: "s\(i)", nonce: "n", codeVerifier: "v", returnTo: "/", client: "web",
                    createdAt: 1000 + Int64(i)), max: 5, now: 1000, timeout: 600)
        }
        #expect(p.logins.map(\.state) == ["s3", "s4", "s5", "s6", "s7"])
        #expect(p.take(state: "s2", now: 1010, timeout: 600) == nil)
        #expect(p.take(state: "s5", now: 1010, timeout: 600)?.state == "s5")
        #expect(p.take(state: "s5", now: 1010, timeout: 600) == nil)
        #expect(p.take(state: "s6", now: 1700, timeout: 600) == nil)  // too late
        #expect(PendingLogins(json: p.json()) == p)
    }
}

@Suite("Session stores: one conformance suite for the sealed cookie and Redis", .serialized)
struct SessionStoreConformanceTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case cookie, redis
        var testDescription: String { rawValue }
    }

    final class Harness {
        let loop = EventLoop()
        let store: SessionStore
        let redis: RedisServerProcess?
        init(_ kind: Kind) throws {
            switch kind {
            case .cookie:
                redis = nil
                store = CookieSessionStore(
                    sealer: SessionTests.sealer, ended: EndedSessions(), wallClock: SystemClock())
            case .redis:
                let server = try RedisServerProcess()
                redis = server
                store = try Self.redisStore(loop: loop, port: server.port)
            }
        }
        /// A Redis session store on this harness's server: another replica, when called again.
        static func redisStore(loop: EventLoop, port: UInt16) throws -> RedisSessionStore {
            let endpoint = try #require(RedisEndpoint(url: "redis://127.0.0.1:\(port)/2"))
            return RedisSessionStore(
                client: Redis(loop: loop, deployment: .standalone(endpoint)), prefix: "t:", sealer: SessionTests.sealer,
                cacheTTL: 0, wallClock: SystemClock())
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
        func save(_ s: Session, creating: Bool = true) -> String? {
            run { done in
                store.save(s, expiresAt: Int64(Date().timeIntervalSince1970) + 60, creating: creating) {
                    done(try? $0.get())
                }
            } ?? nil
        }
        func load(_ c: String) -> Session? {
            guard case .found(let s)? = run({ done in store.load(c, done: done) }) else { return nil }
            return s
        }
        func end(_ s: Session) -> Bool {
            run { done in
                store.end(s, expiresAt: Int64(Date().timeIntervalSince1970) + 60) { done((try? $0.get()) != nil) }
            } ?? false
        }
    }

    @Test(arguments: Kind.allCases) func saveLoadEnd(kind: Kind) throws {
        let h = try Harness(kind)
        let s = SessionTests.session()
        let cookie = try #require(h.save(s))
        #expect(h.load(cookie) == s)
        var changed = s
        changed.lastSeenAt += 10
        let cookie2 = try #require(h.save(changed, creating: false))
        #expect(h.load(cookie2) == changed)
        #expect(h.end(changed))
        #expect(h.load(cookie2) == nil)
        #expect(h.load(cookie) == nil)  // an older cookie of the same session is ended too
        // An update after the end (a refresh or idle touch that was on its way) does not bring it back.
        #expect(h.save(changed, creating: false) == nil)
        #expect(h.load(cookie2) == nil)
    }

    /// `session.cache_ttl` (docs/deploying.md: a logout on one replica ends the session on all "within
    /// `session.cache_ttl`"): a replica that cached a session keeps serving it for at most the
    /// TTL after another replica ended it, then asks Redis again. Time moves by a manual
    /// clock; Redis is a real server.
    @Test func redisCacheServesAnEndedSessionForAtMostTheCacheTTL() throws {
        let h = try Harness(.redis)
        let clock = ManualClock(Date().timeIntervalSince1970)
        let endpoint = try #require(RedisEndpoint(url: "redis://127.0.0.1:\(h.redis!.port)/2"))
        let cached = RedisSessionStore(
            client: Redis(loop: h.loop, deployment: .standalone(endpoint)), prefix: "t:", sealer: SessionTests.sealer,
            cacheTTL: 5, wallClock: clock)
        let s = SessionTests.session()
        let cookie = try #require(h.save(s))  // saved through the other replica
        func lookup() -> Session? {
            guard case .found(let found)? = h.run({ done in cached.load(cookie, done: done) }) else { return nil }
            return found
        }
        #expect(lookup() == s)  // fetched, and cached for 5 s
        #expect(h.end(s))  // ended on the other replica
        clock.advance(4)
        #expect(lookup() == s, "within the TTL the cached copy still answers")
        clock.advance(1)
        #expect(lookup() == nil, "at the TTL the replica asks Redis, which says the session ended")
    }

    @Test(arguments: Kind.allCases) func forgedCookiesNameNothing(kind: Kind) throws {
        let h = try Harness(kind)
        for bad in [
            "", "x", String(repeating: "A", count: 22), String(repeating: "A", count: 5000), "../../etc", "a\r\nb"
        ] {
            #expect(h.load(bad) == nil)
        }
    }

    @Test func redisHoldsNoReadableTokenAndNoCookieValue() throws {
        let h = try Harness(.redis)
        let s = SessionTests.session(refresh: "refresh-token-value")
        let cookie = try #require(h.save(s))
        #expect(cookie == s.id && cookie.utf8.count == 22)  // the cookie is only the random id
        let raw = RedisClient(loop: h.loop, endpoint: RedisEndpoint(url: "redis://127.0.0.1:\(h.redis!.port)/2")!)
        let keys: RedisReply? = h.run { done in raw.send(["KEYS", "*"]) { done(try? $0.get()) } } ?? nil
        guard case .array(let list)? = keys,
            let key = list.compactMap({ r -> [UInt8]? in
                if case .bulk(let b) = r { return b }
                return nil
            })
            .first(where: { String(decoding: $0, as: UTF8.self).hasPrefix("t:session:") })
        else {
            Issue.record("no session key")
            return
        }
        #expect(!String(decoding: key, as: UTF8.self).contains(s.id))  // the key does not give the cookie away
        let value: RedisReply? =
            h.run { done in raw.send(["GET", String(decoding: key, as: UTF8.self)]) { done(try? $0.get()) } } ?? nil
        guard case .bulk(let stored)? = value else {
            Issue.record("no value")
            return
        }
        let text = String(decoding: stored, as: UTF8.self)
        #expect(!text.contains("refresh-token-value") && !text.contains("alice"))
    }

    /// Two replicas (two stores on one Redis) and one session: an update never puts back
    /// tokens older than what is stored — a refresh writes while it holds the lease, or when
    /// nobody refreshed since it read the session (its lease merely expired); a touch from a
    /// stale copy, or a refresh that outlived its lease after the other replica refreshed, is
    /// refused; and nothing brings back an ended session.
    @Test func updatesNeverPutBackOlderTokens() throws {
        let h = try Harness(.redis)
        let a = try #require(h.store as? RedisSessionStore)
        let b = try Harness.redisStore(loop: h.loop, port: h.redis!.port)
        let s = SessionTests.session(refresh: "r1")
        _ = try #require(h.save(s))
        // A Redis Cluster must find the session, its lease and its generation in one slot.
        let slots = Set(
            [a.key(s.id), a.leaseKey(s.id), a.generationKey(s.id)].map { RedisHashSlot.slot(of: Array($0.utf8)) })
        #expect(slots.count == 1)
        func load(_ store: RedisSessionStore) -> Session? {
            guard case .found(let found)? = h.run({ done in store.load(s.id, done: done) }) else { return nil }
            return found
        }
        func lease(_ store: RedisSessionStore) -> RefreshLease? {
            guard case .acquired(let l)? = h.run({ done in store.leaseRefresh(s, done: done) }) else { return nil }
            return l
        }
        func save(_ store: RedisSessionStore, _ session: Session, under lease: RefreshLease?) -> Result<
            String, SessionStoreError
        >? {
            h.run { done in
                store.save(
                    session, expiresAt: Int64(Date().timeIntervalSince1970) + 60, creating: false, lease: lease,
                    done: done)
            }
        }
        func with(_ token: String) -> Session {
            var x = s
            x.refreshToken = token
            return x
        }
        /// What a refresh leader does after taking the lease: read the session again (its basis).
        func reread(_ store: RedisSessionStore) { _ = h.run { done in store.reload(s, done: done) } }

        // A refreshes under its lease; B cannot take the lease meanwhile.
        _ = try #require(load(a))
        let aLease = try #require(lease(a))
        guard case .held? = h.run({ done in b.leaseRefresh(s, done: done) }) else {
            Issue.record("a held lease was granted twice")
            return
        }
        #expect((try? save(a, with("r2"), under: aLease)?.get()) == s.id)
        a.releaseRefresh(aLease)
        // A lease that expired with nobody refreshing since: the save still goes in (the
        // rotated refresh token must not be lost).
        _ = try #require(load(a))
        let expiring = try #require(lease(a))
        reread(a)
        a.releaseRefresh(expiring)  // as if it expired
        #expect((try? save(a, with("r3"), under: expiring)?.get()) == s.id)
        #expect(load(b)?.refreshToken == "r3")
        // A reads, its lease expires, B refreshes: A's late save is refused, B's stays.
        _ = try #require(load(a))
        let late = try #require(lease(a))
        reread(a)
        a.releaseRefresh(late)
        let bLease = try #require(lease(b))
        #expect((try? save(b, with("r4"), under: bLease)?.get()) == s.id)
        b.releaseRefresh(bLease)
        #expect(load(a)?.refreshToken == "r4")  // another read on A meanwhile does not move its refresh's basis
        guard case .failure(let e)? = save(a, with("r-late"), under: late), e == .superseded else {
            Issue.record("a superseded refresh was written")
            return
        }
        #expect(load(b)?.refreshToken == "r4")
        // A touch from a stale copy (A read before B's next refresh) is refused; from a fresh one it goes in.
        let stale = try #require(load(a))
        let bLease2 = try #require(lease(b))
        #expect((try? save(b, with("r5"), under: bLease2)?.get()) == s.id)
        b.releaseRefresh(bLease2)
        var touched = stale
        touched.lastSeenAt += 60
        guard case .failure(let t)? = save(a, touched, under: nil), t == .superseded else {
            Issue.record("a stale touch put back a spent refresh token")
            return
        }
        var current = try #require(load(a))
        #expect(current.refreshToken == "r5")
        current.lastSeenAt += 60
        #expect((try? save(a, current, under: nil)?.get()) == s.id)
        // The lease holder writes whatever its basis (here: a replica that never read the
        // session); without the lease, that basis writes nothing.
        let c = try Harness.redisStore(loop: h.loop, port: h.redis!.port)
        let cLease = try #require(lease(c))
        #expect((try? save(c, with("r6"), under: cLease)?.get()) == s.id)
        c.releaseRefresh(cLease)
        guard case .failure(let noLease)? = save(c, with("r7"), under: cLease), noLease == .superseded else {
            Issue.record("a released lease wrote")
            return
        }
        #expect(load(a)?.refreshToken == "r6")
        // Nothing brings back an ended session, lease or not.
        #expect(h.end(current))
        guard case .failure(let ended)? = save(b, with("r6"), under: bLease2), ended == .ended else {
            Issue.record("an ended session came back")
            return
        }
        #expect(load(a) == nil)
    }

    @Test func redisDownIsUnavailable() throws {
        let h = try Harness(.redis)
        h.redis?.kill()
        guard case .unavailable? = h.run({ done in h.store.load(Session.newID(), done: done) }) else {
            Issue.record("a dead Redis must answer unavailable, not 'no session'")
            return
        }
    }
}

@Suite("Cookie headers")
struct CookieHeaderTests {
    @Test func filterKeepsOthersInOrder() {
        let own: Set<String> = ["tokengate_session", "tokengate_session_1", "tokengate_login"]
        #expect(CookieFilter.without(own, "a=1; tokengate_session=xyz; b=2") == "a=1; b=2")
        #expect(CookieFilter.without(own, "tokengate_session=xyz;tokengate_session_1=abc") == nil)
        #expect(CookieFilter.without(own, "tokengate_sessionX=1;  c=3") == "tokengate_sessionX=1; c=3")
        // a pair without "=" is no cookie (RFC 6265 §4.2.1)
        #expect(CookieFilter.without(own, "flag; tokengate_login=s") == nil)
        #expect(CookieFilter.without(own, "") == nil)
    }

    @Test func chunksJoinAndClear() {
        let long = String(repeating: "v", count: Cookies.chunkSize * 2 + 10)
        var pairs: [(String, String)] = []
        Cookies.pairs(
            "n=\(long.prefix(Cookies.chunkSize)); other=1; n_1=\(long.dropFirst(Cookies.chunkSize).prefix(Cookies.chunkSize)); n_2=\(long.dropFirst(2 * Cookies.chunkSize))"
        ) {
            pairs.append((String(decodingUTF8: $0), String(decodingUTF8: $1)))
        }
        #expect(pairs.map(\.0) == ["n", "other", "n_1", "n_2"])
        #expect(pairs.map(\.1).joined().count == long.count + 1)
        let lines = Cookies.line("n", "x", .init(secure: true, maxAge: 60))
        #expect(lines == "n=x; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure")
        #expect(Cookies.name("s", secure: true) == "__Host-s" && Cookies.name("s", secure: false) == "s")
    }
}
