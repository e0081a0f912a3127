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
    private var digestKey: MACKey

    static let codePurpose = "as-code"
    static let familyPurpose = "as-refresh-family"
    static let consentPurpose = "as-consent"
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
        (sealer, digestKey) = Self.keys(config)
    }

    func apply(_ config: GatewayConfig) { (sealer, digestKey) = Self.keys(config) }

    private static func keys(_ config: GatewayConfig) -> (CookieSealer, MACKey) {
        let key = config.session.keys.first ?? ProcessSecrets.sessionKey
        let derived = MACKey(secret: key)?.authenticate(Array("tokengate/as-store-keys/v1".utf8)) ?? key
        guard let mac = MACKey(secret: derived) else { preconditionFailure("a session key is 32 bytes") }
        return (CookieSealer(sessionKeysOf: config), mac)
    }

    private func key(_ kind: String, _ parts: [String]) -> String {
        let text = ([kind] + parts).joined(separator: "\u{0}")
        return "as:\(kind):" + Base64URL.encode(digestKey.authenticate(Array(text.utf8)))
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
        store.redeem(key("code", [code]), keepFor: tokensLive + 60) { [sealer] result in
            done(
                result.map { taken in
                    let open = { (v: String) in
                        sealer.open(v, purpose: Self.codePurpose).flatMap(AuthorizationCodeRecord.init(encoded:))
                    }
                    switch taken {
                    case .none: return .unknown
                    case .first(let v): return open(v).map(CodeUse.first) ?? .unknown
                    case .again(let v): return open(v).map(CodeUse.again) ?? .unknown
                    }
                })
        }
    }

    // MARK: Refresh-token families

    func saveFamily(_ family: RefreshTokenFamily, done: @escaping (Result<Void, GrantStoreError>) -> Void) {
        let ttl = max(1, family.expiresAt - wallClock.seconds)
        store.put(
            key("family", [family.id]), sealer.seal(family.encoded, purpose: Self.familyPurpose), ttl: ttl, done: done)
    }

    /// The family and its sealed form as stored (what a rotation must still find there).
    func family(_ id: String, done: @escaping (Result<(RefreshTokenFamily, String)?, GrantStoreError>) -> Void) {
        store.get(key("family", [id])) { [sealer] result in
            done(
                result.map { stored in
                    guard let stored,
                        let f = sealer.open(stored, purpose: Self.familyPurpose).flatMap(
                            RefreshTokenFamily.init(encoded:)),
                        f.id == id
                    else { return nil }
                    return (f, stored)
                })
        }
    }

    /// Rotates the family from `stored` to `next`; false when another request rotated it first.
    func rotate(
        from stored: String, to next: RefreshTokenFamily, done: @escaping (Result<Bool, GrantStoreError>) -> Void
    ) {
        let ttl = max(1, next.expiresAt - wallClock.seconds)
        store.swap(
            key("family", [next.id]), expected: stored, with: sealer.seal(next.encoded, purpose: Self.familyPurpose),
            ttl: ttl, done: done)
    }

    /// Ends a grant: its refresh-token family is deleted, and its access tokens (`sid`) are
    /// refused on every replica from now until the last of them would have expired.
    func end(_ grant: GrantSubject, grantID: String, accessTokenTTL: Double, done: @escaping () -> Void) {
        let now = wallClock.seconds
        var record = RevocationRecord(transmitter: Self.revoker, jti: "grant:" + grantID)
        record.changes = [
            RevocationTable.Change(
                effect: .revoke(at: now, sid: grantID), subject: .sub(grant.subject),
                issuer: AuthorizationServerConfig.issuerName, until: now + Int64(accessTokenTTL) + 60)
        ]
        hub.apply(logged: record, now: wallClock.now)
        store.delete(key("family", [grantID])) { [revocationLog] _ in
            guard let revocationLog else { return done() }
            revocationLog.append(record) { _ in done() }
        }
    }

    // MARK: Consents

    /// One user's consents, one record: each client and resource they granted, with the
    /// scopes. Kept as one so the user's own page can list and revoke them.
    struct Consents: Equatable {
        var entries: [Entry] = []

        struct Entry: Equatable {
            var clientID: String
            var resource: String
            var scopes: [String]
            var at: Int64
        }

        func scopes(client: String, resource: String) -> Set<String> {
            Set(entries.first { $0.clientID == client && $0.resource == resource }?.scopes ?? [])
        }

        /// At most this many clients and resources per user: the oldest goes first.
        static let capacity = 64

        var json: JSONValue {
            .array(
                entries.map {
                    .object(
                        JSONObject([
                            "c": .string($0.clientID), "r": .string($0.resource),
                            "s": .array($0.scopes.map { .string($0) }), "t": .number(String($0.at))
                        ]))
                })
        }

        init() {}

        init?(_ value: JSONValue) {
            guard let list = value.array else { return nil }
            for item in list {
                guard let o = item.object, let c = o["c"]?.string, let r = o["r"]?.string,
                    let s = o["s"]?.array?.compactMap(\.string), let t = o["t"]?.int64
                else { return nil }
                entries.append(Entry(clientID: c, resource: r, scopes: s, at: t))
            }
        }
    }

    private func consentKey(idp: String, subject: String) -> String { key("consents", [idp, subject]) }

    /// What the user granted before, and its sealed form as stored.
    func consents(idp: String, subject: String, done: @escaping (Result<Consents, GrantStoreError>) -> Void) {
        store.get(consentKey(idp: idp, subject: subject)) { [sealer] result in
            done(
                result.map { stored in
                    guard let stored, let plain = sealer.open(stored, purpose: Self.consentPurpose),
                        let value = try? JSONParser.parse(plain), let c = Consents(value)
                    else { return Consents() }
                    return c
                })
        }
    }

    /// Records (or, with no scopes, removes) the user's consent for a client and resource.
    func setConsent(
        idp: String, subject: String, client: String, resource: String, scopes: [String], ttl: Double,
        done: @escaping (Result<Void, GrantStoreError>) -> Void
    ) {
        consents(idp: idp, subject: subject) { [self] result in
            guard case .success(var c) = result else {
                if case .failure(let e) = result { done(.failure(e)) }
                return
            }
            c.entries.removeAll { $0.clientID == client && $0.resource == resource }
            if !scopes.isEmpty {
                c.entries.append(.init(clientID: client, resource: resource, scopes: scopes, at: wallClock.seconds))
                if c.entries.count > Consents.capacity { c.entries.removeFirst(c.entries.count - Consents.capacity) }
            }
            let key = consentKey(idp: idp, subject: subject)
            guard !c.entries.isEmpty else { return store.delete(key, done: done) }
            let body = JSONSerializer.serialize(c.json)
            store.put(key, sealer.seal(Array(body.utf8), purpose: Self.consentPurpose), ttl: Int64(ttl), done: done)
        }
    }
}
