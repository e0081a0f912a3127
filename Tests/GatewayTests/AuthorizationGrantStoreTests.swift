import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway

/// The AS's memory store and the consent ticket: a code taken once (then found again, for
/// ending what it gave), a rotation that only one of two racing requests wins, entries that
/// expire, a full table that refuses rather than drops; a ticket only this gateway can make,
/// for a short time.
@Suite("Authorization server: the grant store and the consent ticket")
struct AuthorizationGrantStoreTests {
    final class Clock: @unchecked Sendable {
        var now = 1_800_000_000.0
    }

    func sync<T>(_ call: (@escaping (T) -> Void) -> Void) -> T {
        var out: T?
        call { out = $0 }
        return out!
    }

    @Test func aValueIsRedeemedOnceAndThenFoundTaken() throws {
        let clock = Clock()
        let store = MemoryAuthorizationGrants(now: { clock.now })
        _ = sync { store.put("k", "v", ttl: 60, done: $0) }
        #expect(try sync { store.redeem("k", keepFor: 600, done: $0) }.get() == .first("v"))
        #expect(try sync { store.redeem("k", keepFor: 600, done: $0) }.get() == .again("v"))
        clock.now += 601
        #expect(try sync { store.redeem("k", keepFor: 600, done: $0) }.get() == Redemption.none)
        #expect(try sync { store.redeem("never", keepFor: 600, done: $0) }.get() == Redemption.none)
    }

    @Test func onlyOneOfTwoRotationsWins() throws {
        let store = MemoryAuthorizationGrants()
        _ = sync { store.put("f", "gen1", ttl: 60, done: $0) }
        #expect(try sync { store.swap("f", expected: "gen1", with: "gen2a", ttl: 60, done: $0) }.get())
        #expect(try !sync { store.swap("f", expected: "gen1", with: "gen2b", ttl: 60, done: $0) }.get())
        #expect(try sync { store.get("f", done: $0) }.get() == "gen2a")
        _ = sync { store.delete("f", done: $0) }
        #expect(try sync { store.get("f", done: $0) }.get() == nil)
    }

    @Test func aFullTableRefusesNewEntriesUntilSomeExpireAndKindsDoNotCrowdEachOther() throws {
        let clock = Clock()
        let store = MemoryAuthorizationGrants(capacity: 2, now: { clock.now })
        _ = sync { store.put("as:code:a", "1", ttl: 10, done: $0) }
        _ = sync { store.put("as:code:b", "2", ttl: 100, done: $0) }
        if case .success = sync({ store.put("as:code:c", "3", ttl: 10, done: $0) }) {
            Issue.record("a full table took more")
        }
        // Codes filling their table leave room for families.
        if case .failure = sync({ store.put("as:family:a", "f", ttl: 10, done: $0) }) {
            Issue.record("one kind crowded out another")
        }
        #expect(try sync { store.get("as:code:a", done: $0) }.get() == "1")
        clock.now += 11
        if case .failure = sync({ store.put("as:code:c", "3", ttl: 10, done: $0) }) {
            Issue.record("an expired entry stayed")
        }
    }

    @Test func createTakesAnEmptyKeyOnly() throws {
        let store = MemoryAuthorizationGrants()
        #expect(try sync { store.create("as:family:x", "v1", ttl: 60, done: $0) }.get())
        #expect(try !sync { store.create("as:family:x", "v2", ttl: 60, done: $0) }.get())
        _ = sync { store.put("as:family:y", "ended", ttl: 60, done: $0) }
        #expect(try !sync { store.create("as:family:y", "v", ttl: 60, done: $0) }.get())
    }

    @Test func aConsentTicketIsThisGatewaysForTenMinutes() throws {
        let challenge = Base64URL.encode([UInt8](repeating: 1, count: 32))
        guard
            case .success(let target) = AuthorizationRequest.target([
                ("client_id", "https://app.example/c.json"), ("redirect_uri", "http://127.0.0.1/cb"),
                ("response_type", "code"), ("code_challenge", challenge), ("code_challenge_method", "S256"),
                ("resource", "https://gw/mcp"), ("state", "s")
            ])
        else {
            Issue.record("target refused")
            return
        }
        let request = try AuthorizationRequest(target, resources: ["https://gw/mcp"])
        let sealer = CookieSealer(keys: [AEADKey(secret: [UInt8](repeating: 3, count: 32))!])
        let ticket = ConsentTicket(request: request, scopes: ["mcp:read"], sessionID: "sess", expiresAt: 1_000)
        let text = ticket.sealed(by: sealer)
        #expect(ConsentTicket.open(text, with: sealer, resources: ["https://gw/mcp"], now: 999) == ticket)
        #expect(ConsentTicket.open(text, with: sealer, resources: ["https://gw/mcp"], now: 1_000) == nil)
        // A resource no longer served, another gateway's keys, another purpose's seal: refused.
        #expect(ConsentTicket.open(text, with: sealer, resources: ["https://gw/other"], now: 999) == nil)
        let other = CookieSealer(keys: [AEADKey(secret: [UInt8](repeating: 4, count: 32))!])
        #expect(ConsentTicket.open(text, with: other, resources: ["https://gw/mcp"], now: 999) == nil)
        let elsewhere = sealer.seal(Array("{}".utf8), purpose: "as-code")
        #expect(ConsentTicket.open(elsewhere, with: sealer, resources: ["https://gw/mcp"], now: 999) == nil)
    }
}
