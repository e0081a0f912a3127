import Foundation
import JOSE
import OAuth
import Reactor

/// What the AS keeps of the grants it made, on one worker, over the store
/// (`AuthorizationGrantStore`): codes, refresh-token families, consents. Values are sealed
/// with `session.keys` (AES-256-GCM) under a purpose of their own; keys are HMACs, under a key
/// derived from `session.keys`, of the code, the family id, or the user, client and resource a
/// consent is for: the store holds no code, no refresh token and no `sub` in the clear.
///
/// A grant ended early (a code used twice, a refresh token reused: RFC 9700 §4.14.2) ends its
/// access tokens too: a revocation of their `sid` for the user, applied here and written to
/// the store's revocation log, which every replica reads (the Shared Signals revocations).
final class AuthorizationGrants {
    private let store: AuthorizationGrantStore
    private let hub: SharedSignalsHub
    private let revocationLog: RevocationLog.Writer?
    private let wallClock: any WallClock
    /// Also seals the consent page's ticket.
    private(set) var sealer: CookieSealer
    /// One digest key per `session.keys` entry: records are written under the first and found
    /// under any, so a new first key (a rotation) loses no grant.
    private var digestKeys: [MACKey]

    static let codePurpose = "as-code"
    static let familyPurpose = "as-refresh-family"
    static let consentPurpose = "as-consent"
    /// What an ended family's key holds until the family would have expired: no new family
    /// can be saved there, and no rotation finds one.
    static let ended = "ended"
    /// The name the AS's revocations carry in the revocation log: not a transmitter's (a
    /// `shared_signals` name is a config key, which never starts with `@`).
    static let revoker = "@authorization-server"

    init(
        store: AuthorizationGrantStore, hub: SharedSignalsHub, revocationLog: RevocationLog.Writer?,
        wallClock: any WallClock, config: GatewayConfig
    ) {
        self.store = store
        self.hub = hub
        self.revocationLog = revocationLog
        self.wallClock = wallClock
        (sealer, digestKeys) = Self.keys(config)
    }

    func apply(_ config: GatewayConfig) { (sealer, digestKeys) = Self.keys(config) }

    private static func keys(_ config: GatewayConfig) -> (CookieSealer, [MACKey]) {
        let secrets = config.session.keys.isEmpty ? [ProcessSecrets.sessionKey] : config.session.keys
        let macs = secrets.compactMap { key in
            MACKey(secret: MACKey(secret: key)?.authenticate(Array("tokengate/as-store-keys/v1".utf8)) ?? key)
        }
        guard !macs.isEmpty else { preconditionFailure("a session key is 32 bytes") }
        return (CookieSealer(sessionKeysOf: config), macs)
    }

    /// The record's key under each digest key, the one new records are written under first.
    private func keys(_ kind: String, _ parts: [String]) -> [String] {
        let text = Array(([kind] + parts).joined(separator: "\u{0}").utf8)
        return digestKeys.map { "as:\(kind):" + Base64URL.encode($0.authenticate(text)) }
    }

    private func key(_ kind: String, _ parts: [String]) -> String { keys(kind, parts)[0] }

    /// The first of `candidates` holding something, with its value.
    private func find(
        _ candidates: [String], done: @escaping (Result<(key: String, value: String)?, GrantStoreError>) -> Void
    ) {
        guard let first = candidates.first else { return done(.success(nil)) }
        store.get(first) { [self] result in
            switch result {
            case .failure(let e): done(.failure(e))
            case .success(let v?): done(.success((first, v)))
            case .success(nil): find(Array(candidates.dropFirst()), done: done)
            }
        }
    }

    // MARK: Codes

    /// Keeps `record` under a new code (256 random bits) until it expires; the code, or nil
    /// when the store would not take it.
    func issueCode(_ record: AuthorizationCodeRecord, done: @escaping (Result<String, GrantStoreError>) -> Void) {
        let code = Base64URL.encode(SecureRandom.bytes(32))
        let sealed = sealer.seal(record.encoded, purpose: Self.codePurpose)
        store.put(key("code", [code]), sealed, ttl: AuthorizationCodeRecord.lifetime + 5) { result in
            done(result.map { code })
        }
    }

    enum CodeUse {
        case first(AuthorizationCodeRecord)
        /// Redeemed before: what it gave is to be ended.
        case again(AuthorizationCodeRecord)
        case unknown
    }

    /// Takes the code once. Its record stays, marked taken, as long as the tokens the first use
    /// gave could still be used: a second use can end them.
    func redeemCode(_ code: String, tokensLive: Int64, done: @escaping (Result<CodeUse, GrantStoreError>) -> Void) {
        guard code.utf8.count == 43, Base64URL.decode(code) != nil else { return done(.success(.unknown)) }
        redeem(keys("code", [code]), keepFor: tokensLive + 60, done: done)
    }

    private func redeem(
        _ candidates: [String], keepFor: Int64, done: @escaping (Result<CodeUse, GrantStoreError>) -> Void
    ) {
        guard let first = candidates.first else { return done(.success(.unknown)) }
        store.redeem(first, keepFor: keepFor) { [self] result in
            let open = { (v: String) in
                self.sealer.open(v, purpose: Self.codePurpose).flatMap(AuthorizationCodeRecord.init(encoded:))
            }
            switch result {
            case .failure(let e): done(.failure(e))
            case .success(.none): redeem(Array(candidates.dropFirst()), keepFor: keepFor, done: done)
            case .success(.first(let v)): done(.success(open(v).map(CodeUse.first) ?? .unknown))
            case .success(.again(let v)): done(.success(open(v).map(CodeUse.again) ?? .unknown))
            }
        }
    }

    // MARK: Refresh-token families

    /// Saves a new family; false when its key holds something already (its grant ended first:
    /// a code used twice while its first use was still being answered).
    func saveFamily(_ family: RefreshTokenFamily, done: @escaping (Result<Bool, GrantStoreError>) -> Void) {
        let ttl = max(1, family.expiresAt - wallClock.seconds)
        store.create(
            key("family", [family.id]), sealer.seal(family.encoded, purpose: Self.familyPurpose), ttl: ttl, done: done)
    }

    /// A family as stored: the family, its sealed form and the key it is under (what a
    /// rotation must still find there).
    struct StoredFamily {
        let family: RefreshTokenFamily
        let sealed: String
        let key: String
    }

    func family(_ id: String, done: @escaping (Result<StoredFamily?, GrantStoreError>) -> Void) {
        find(keys("family", [id])) { [sealer] result in
            done(
                result.map { found in
                    guard let found,
                        let f = sealer.open(found.value, purpose: Self.familyPurpose).flatMap(
                            RefreshTokenFamily.init(encoded:)),
                        f.id == id
                    else { return nil }
                    return StoredFamily(family: f, sealed: found.value, key: found.key)
                })
        }
    }

    /// Rotates the family to `next`; false when another request rotated (or ended) it first.
    func rotate(
        _ stored: StoredFamily, to next: RefreshTokenFamily, done: @escaping (Result<Bool, GrantStoreError>) -> Void
    ) {
        let ttl = max(1, next.expiresAt - wallClock.seconds)
        store.swap(
            stored.key, expected: stored.sealed, with: sealer.seal(next.encoded, purpose: Self.familyPurpose),
            ttl: ttl, done: done)
    }

    /// Ends a grant for good: its refresh-token family's key holds a tombstone (no family can
    /// be saved or rotated there again), and its access tokens (`sid`) are refused on every
    /// replica, each of them: the revocation's time is past the last one any replica could
    /// sign (a clock ahead by a minute included), for the grant id never issues again.
    func end(
        grantID: String, familyID: String, accessTokenTTL: Double, familyTTL: Double, done: @escaping () -> Void
    ) {
        let now = wallClock.seconds
        let after = now + Int64(accessTokenTTL) + 60
        var record = RevocationRecord(
            transmitter: Self.revoker, jti: "grant:\(grantID):\(Base64URL.encode(SecureRandom.bytes(9)))")
        // It stands as long as the family could: a refresh checks it too, so a tombstone the
        // store lost does not bring the family back.
        record.changes = [
            RevocationTable.Change(
                effect: .revoke(at: after, sid: nil), subject: .session(grantID),
                issuer: AuthorizationServerConfig.issuerName, until: max(after, now + Int64(familyTTL)) + 60)
        ]
        hub.apply(logged: record, now: wallClock.now)
        let key = key("family", [familyID])
        store.put(key, Self.ended, ttl: Int64(familyTTL)) { [store, revocationLog] first in
            let logged = {
                guard let revocationLog else { return done() }
                revocationLog.append(record) { _ in done() }
            }
            guard case .failure = first else { return logged() }
            // Once more: the revocation above already refuses the family, here and, once
            // logged, on every replica.
            store.put(key, Self.ended, ttl: Int64(familyTTL)) { _ in logged() }
        }
    }

    // MARK: Registered clients

    static let clientPurpose = "as-registered-client"

    /// Keeps a registered client's metadata (the request's, as checked) under its id.
    func register(
        _ id: String, metadata: [UInt8], ttl: Double, done: @escaping (Result<Bool, GrantStoreError>) -> Void
    ) {
        store.create(
            key("client", [id]), sealer.seal(metadata, purpose: Self.clientPurpose), ttl: Int64(ttl), done: done)
    }

    /// A registered client's metadata, if it is registered.
    func registered(_ id: String, done: @escaping (Result<[UInt8]?, GrantStoreError>) -> Void) {
        find(keys("client", [id])) { [sealer] result in
            done(result.map { found in found.flatMap { sealer.open($0.value, purpose: Self.clientPurpose) } })
        }
    }

    // MARK: Consents

    /// One user's consents, one record: each client and resource they granted, with the
    /// scopes, when, and the consent's own id. A grant made under a consent carries that id;
    /// a refresh (and a code's redemption) finds it still standing, or the grant ends. So a
    /// revoked or expired consent ends its grants at their next use, whatever their number.
    struct Consents: Equatable {
        var entries: [Entry] = []

        struct Entry: Equatable {
            var id: String
            var clientID: String
            var resource: String
            var scopes: [String]
            var at: Int64
        }

        /// The entry for a client and resource, if it stands (given within `ttl` of `now`).
        func entry(client: String, resource: String, now: Int64, ttl: Double) -> Entry? {
            entries.first { $0.clientID == client && $0.resource == resource && $0.at + Int64(ttl) > now }
        }

        /// At most this many clients and resources per user: the oldest goes first.
        static let capacity = 64

        var json: JSONValue {
            .array(
                entries.map {
                    .object(
                        JSONObject([
                            "i": .string($0.id), "c": .string($0.clientID), "r": .string($0.resource),
                            "s": .array($0.scopes.map { .string($0) }), "t": .number(String($0.at))
                        ]))
                })
        }

        init() {}

        init?(_ value: JSONValue) {
            guard let list = value.array else { return nil }
            for item in list {
                guard let o = item.object, let i = o["i"]?.string, let c = o["c"]?.string, let r = o["r"]?.string,
                    let s = o["s"]?.array?.compactMap(\.string), let t = o["t"]?.int64
                else { return nil }
                entries.append(Entry(id: i, clientID: c, resource: r, scopes: s, at: t))
            }
        }
    }

    /// What the user granted before.
    func consents(idp: String, subject: String, done: @escaping (Result<Consents, GrantStoreError>) -> Void) {
        find(keys("consents", [idp, subject])) { [sealer] result in
            done(
                result.map { found in
                    guard let stored = found?.value, let plain = sealer.open(stored, purpose: Self.consentPurpose),
                        let value = try? JSONParser.parse(plain), let c = Consents(value)
                    else { return Consents() }
                    return c
                })
        }
    }

    /// Whether the consent `id` still stands for the grant's user, client and resource.
    func consentStands(_ id: String, for grant: GrantSubject, ttl: Double, done: @escaping (Bool?) -> Void) {
        consents(idp: grant.idpIssuer, subject: grant.subject) { [wallClock] result in
            guard case .success(let c) = result else { return done(nil) }
            done(
                c.entry(client: grant.clientID, resource: grant.resource, now: wallClock.seconds, ttl: ttl)?.id == id)
        }
    }

    /// Gives (`scopes`) or revokes (nil) the user's consent for a client and resource; `done`
    /// gets the entry as it is after (given) or was before (revoked). A consent given again
    /// keeps its id: the grants made under it go on. Expired entries are dropped as it is
    /// written; the record lives as long as the longest grant could (`keep`), and is written
    /// under the first key only (an older key's copy is removed).
    func changeConsent(
        idp: String, subject: String, client: String, resource: String, scopes: [String]?, ttl: Double,
        keep: Double, done: @escaping (Result<Consents.Entry?, GrantStoreError>) -> Void
    ) {
        let candidates = keys("consents", [idp, subject])
        consents(idp: idp, subject: subject) { [self] result in
            guard case .success(var c) = result else {
                if case .failure(let e) = result { done(.failure(e)) }
                return
            }
            let now = wallClock.seconds
            c.entries.removeAll { $0.at + Int64(ttl) <= now }
            let index = c.entries.firstIndex { $0.clientID == client && $0.resource == resource }
            let old = index.map { c.entries[$0] }
            var answer = old
            if let scopes {
                let entry = Consents.Entry(
                    id: old?.id ?? Base64URL.encode(SecureRandom.bytes(12)), clientID: client, resource: resource,
                    scopes: scopes, at: now)
                if let index { c.entries.remove(at: index) }
                c.entries.append(entry)
                if c.entries.count > Consents.capacity { c.entries.removeFirst(c.entries.count - Consents.capacity) }
                answer = entry
            } else if let index {
                c.entries.remove(at: index)
            }
            let stored = { (r: Result<Void, GrantStoreError>) in
                for older in candidates.dropFirst() { self.store.delete(older) { _ in } }
                done(r.map { answer })
            }
            guard !c.entries.isEmpty else { return store.delete(candidates[0], done: stored) }
            let body = JSONSerializer.serialize(c.json)
            store.put(
                candidates[0], sealer.seal(Array(body.utf8), purpose: Self.consentPurpose),
                ttl: Int64(max(ttl, keep)), done: stored)
        }
    }
}
