import Foundation
import JOSE
import OAuth
import Reactor
import Synchronization

/// The process's Shared Signals state, shared by its workers and the main loop: each
/// transmitter's keys, stream and push credential (the main loop's `TransmitterStreams` keep
/// them current), the SETs already applied (by `jti`), and the revocations their events left.
/// A worker checks requests against its own copy of the revocations (`RevocationSnapshot`),
/// taken again only when `version` moves: no lock on the request path.
///
/// `@unchecked Sendable`: every mutable field changes only under `lock`.
final class SharedSignalsHub: @unchecked Sendable {
    /// What a worker's push endpoint needs of one transmitter, and what the status page shows.
    struct Transmitter: Sendable {
        let config: TransmitterConfig
        let verifier: SecurityEventTokenVerifier
        /// The `Authorization` value every push must carry (set on the stream).
        let pushAuthorization: String
        var keys: JWKSet?
        var streamID: String?
        var status = "not yet up"
        var verified = false
        var lastEventAt: Double?
        /// How long the last SET took to arrive: from its `iat` to its apply, in seconds.
        var deliveryLag: Double?
        var lastError: String?
    }

    /// How a pushed SET came out, for `tokengate_ssf_events_total{result}`.
    enum Result: String, Sendable {
        case applied, duplicate, ignored, refused
    }

    private let lock = NSLock()
    private var transmitters: [String: Transmitter] = [:]
    private var byPath: [String: String] = [:]
    /// Applied SETs by `jti`, until when they are remembered.
    private var seen: [String: Double] = [:]
    private var table = RevocationTable()
    private var counts: [String: Int] = [:]
    /// Bumped by every change to `table`: workers copy it when it moves.
    let version = Atomic<Int>(0)
    /// Asks the main loop to refetch a transmitter's keys (a SET named an unknown `kid`);
    /// `done` gets the new set or nil, on the loop `done` was asked from.
    var refetchKeys: ((_ transmitter: String, _ done: @escaping (JWKSet?) -> Void) -> Void)?
    /// Applied SETs are remembered this long, and an older SET is refused (the verifier's
    /// `maxAge`): a replay of one is never taken for new.
    static let seenFor = 86_400.0
    static let seenCapacity = 100_000

    init() {}

    /// A new config's transmitters; those that stay keep their keys and stream.
    func apply(_ config: GatewayConfig, pushSecret: MACKey) {
        lock.withLock {
            keys = (CookieSealer(sessionKeysOf: config), pushSecret)
            // The authorization server's own revocations (a grant ended early) stand while the
            // access tokens they end could still be presented.
            ownRevocationTTL = config.authorizationServer.map { $0.accessTokenTTL + 120 } ?? 0
            var next: [String: Transmitter] = [:]
            for (name, t) in config.sharedSignals {
                let authorization = Self.pushAuthorization(t, secret: pushSecret)
                var verifier = SecurityEventTokenVerifier(issuer: t.issuer, audiences: t.audiences)
                verifier.maxAge = Int64(Self.seenFor) - 60
                if t.profile == .googleRISC {
                    // Google's SETs carry no `typ`, and sign `iss` with a trailing slash.
                    verifier.requiresType = false
                    verifier.issuerSpellings = [t.issuer + "/"]
                }
                var entry = Transmitter(config: t, verifier: verifier, pushAuthorization: authorization)
                if let old = transmitters[name], old.config.issuer == t.issuer {
                    // The transmitter's keys are its own; the stream is this receiver's only
                    // while its URL and credential stay (a new session key sets it again).
                    entry.keys = old.keys
                    if old.config.endpointURL == t.endpointURL, old.pushAuthorization == authorization {
                        entry.streamID = old.streamID
                        entry.status = old.status
                        entry.verified = old.verified
                        entry.lastEventAt = old.lastEventAt
                        entry.deliveryLag = old.deliveryLag
                    }
                }
                next[name] = entry
            }
            transmitters = next
            byPath = Dictionary(
                next.filter { $0.value.config.delivery == .push }.map { ($0.value.config.endpointPath, $0.key) },
                uniquingKeysWith: { a, _ in a })
        }
    }

    /// The push `Authorization` of a transmitter's stream: `Bearer` and a keyed digest of the
    /// stream's identity under `session.keys`, so every replica with those keys accepts the
    /// same pushes without sharing a secret through the store.
    static func pushAuthorization(_ t: TransmitterConfig, secret: MACKey) -> String {
        let mac = secret.authenticate(
            Array("tokengate/ssf-push/v1\u{0}\(t.name)\u{0}\(t.issuer)\u{0}\(t.endpointURL)".utf8))
        return "Bearer " + Base64URL.encode(mac)
    }

    /// The transmitter whose push path `path` is.
    func transmitter(atPath path: String) -> Transmitter? {
        lock.withLock { byPath[path].flatMap { transmitters[$0] } }
    }

    func transmitter(named name: String) -> Transmitter? { lock.withLock { transmitters[name] } }

    var all: [String: Transmitter] { lock.withLock { transmitters } }

    var pushPaths: Set<String> { lock.withLock { Set(byPath.keys) } }

    /// The main loop's news about a transmitter: its keys, its stream, an error.
    func update(_ name: String, _ change: (inout Transmitter) -> Void) {
        lock.withLock {
            guard var t = transmitters[name] else { return }
            change(&t)
            transmitters[name] = t
        }
    }

    /// Applies a verified SET of `transmitter` once: false when its `jti` was applied before.
    func apply(_ set: SecurityEventToken, from name: String, now: Double) -> Result {
        lock.withLock {
            guard var t = transmitters[name] else { return .refused }
            let key = name + "\u{0}" + set.jti
            if let until = seen[key], until > now {
                count(name, set, .duplicate)
                return .duplicate
            }
            if seen.count >= Self.seenCapacity { seen = seen.filter { $0.value > now } }
            seen[key] = now + Self.seenFor
            t.lastEventAt = now
            t.deliveryLag = max(0, now - Double(set.iat))
            let (result, changes) = Self.changes(set, t, now: now)
            record(changes, now: now)
            streamState(set, &t)
            transmitters[name] = t
            count(name, set, result)
            return result
        }
    }

    /// What the stream's own events say of it (called under `lock`).
    private func streamState(_ set: SecurityEventToken, _ t: inout Transmitter) {
        switch set.event.type {
        case .verification:
            // A state was checked by the endpoint (`expectsState`); one the transmitter
            // sends unasked carries none (SSF 1.0 §8.1.4.1).
            t.verified = true
            t.status = "enabled"
        case .streamUpdated:
            if let status = set.event.status { t.status = String(status.prefix(32)) }
        default: break
        }
    }

    /// Whether a verification event's `state` is the one this receiver asks for (a wrong one is
    /// refused with `invalid_state`, SSF 1.0 §8.1.4.2).
    func expectsState(_ state: String, of name: String) -> Bool {
        guard let t = transmitter(named: name), let stream = t.streamID else { return false }
        return ConstantTime.equals(state, Self.verificationState(t.pushAuthorization, stream: stream))
    }

    /// The `state` a verification asks for: derived from the push credential and the stream,
    /// so that whichever replica the event reaches expects the state any replica asked with.
    static func verificationState(_ pushAuthorization: String, stream: String) -> String {
        let digest = Digest.sha256.hash(utf8: "tokengate/ssf-verify/v1\u{0}\(pushAuthorization)\u{0}\(stream)")
        return Base64URL.encode(digest.prefix(16))
    }

    /// The changes a verified SET of `t` makes to the table (called under `lock`): none, and
    /// `.ignored`, for an event not asked for, a subject none of its issuers names, or a type
    /// without effect; the stream's own events are `.applied` with none.
    private static func changes(_ set: SecurityEventToken, _ t: Transmitter, now: Double)
        -> (Result, [RevocationTable.Change])
    {
        guard let configName = set.event.type.configName else {
            if case .other = set.event.type { return (.ignored, []) }
            return (.applied, [])
        }
        guard t.config.events.contains(configName), let subject = set.event.subject else { return (.ignored, []) }
        let (subjects, sid) = subject.revokedSubjects(issuers: t.config.issuerURLs)
        // An event cannot have happened after it reached us: a time ahead (within the
        // verifier's leeway, or this clock lagging) would have every token and answer the AS
        // gives meanwhile count as before it.
        guard let effect = RevocationTable.Effect(set, session: sid)?.happened(notAfter: Int64(now)), !subjects.isEmpty
        else { return (.ignored, []) }
        let until = Int64(now + t.config.revocationTTL)
        var changes: [RevocationTable.Change] = []
        for (s, url) in subjects {
            // By the `issuers:` entry a token or session names (its config name): an `iss_sub`
            // names the subject at the entries with that `iss`; any other identifier names it
            // at each of the transmitter's issuers, and at no other.
            for issuer in url.map({ t.config.issuerNames[$0] ?? [] }) ?? t.config.issuers {
                changes.append(
                    RevocationTable.Change(effect: effect, subject: s, issuer: issuer, until: until, jti: set.jti))
            }
        }
        return (.applied, changes)
    }

    /// Records the changes (called under `lock`).
    private func record(_ changes: [RevocationTable.Change], now: Double) {
        guard !changes.isEmpty else { return }
        for change in changes where change.until > Int64(now) { table.apply(change, now: Int64(now)) }
        version.add(1, ordering: .releasing)
    }

    // MARK: The store's log (RevocationLog)

    /// The keys records are sealed with and `jti`s digested under (`session.keys`).
    var storeKeys: (sealer: CookieSealer, digest: MACKey)? { lock.withLock { keys } }
    private var keys: (sealer: CookieSealer, digest: MACKey)?

    /// The longest `revocation_ttl` (or the authorization server's): the log keeps what is younger.
    var longestTTL: Double {
        lock.withLock { max(ownRevocationTTL, transmitters.values.map(\.config.revocationTTL).max() ?? 0) }
    }
    private var ownRevocationTTL = 0.0

    /// What applying `set` would tell the other replicas, for the store's log before it is
    /// applied here; nil when this process applied its `jti` before, or it changes nothing.
    func record(for set: SecurityEventToken, from name: String, now: Double) -> RevocationRecord? {
        lock.withLock {
            guard let t = transmitters[name] else { return nil }
            if let until = seen[name + "\u{0}" + set.jti], until > now { return nil }
            var r = RevocationRecord(transmitter: name, jti: set.jti)
            r.changes = Self.changes(set, t, now: now).1
            switch set.event.type {
            case .verification: r.verified = true
            case .streamUpdated: r.status = set.event.status.map { String($0.prefix(32)) }
            default: break
            }
            return r.isEmpty ? nil : r
        }
    }

    /// A SET another replica (or an earlier try of this one) wrote to the log first: applied
    /// here too (its changes are idempotent), remembered, and counted as a duplicate. Its
    /// record may never be read here (this replica may have skipped past it, or the earlier
    /// try's answer was lost), and the transmitter will not deliver it again after the 202.
    func duplicate(_ set: SecurityEventToken, from name: String, now: Double) -> Result {
        lock.withLock {
            guard var t = transmitters[name] else { return }
            let key = name + "\u{0}" + set.jti
            if seen[key].map({ $0 <= now }) ?? true {
                seen[key] = now + Self.seenFor
                record(Self.changes(set, t, now: now).1, now: now)
                streamState(set, &t)
                transmitters[name] = t
            }
            count(name, set, .duplicate)
        }
        return .duplicate
    }

    /// Applies a record from the log, unless this process applied its SET already (its own
    /// records, applied before they were answered, among them). False when it was not applied.
    @discardableResult
    func apply(logged r: RevocationRecord, now: Double) -> Bool {
        lock.withLock {
            let key = r.transmitter + "\u{0}" + r.jti
            if let until = seen[key], until > now { return false }
            if seen.count >= Self.seenCapacity { seen = seen.filter { $0.value > now } }
            seen[key] = now + Self.seenFor
            record(
                r.changes.map {
                    var c = $0
                    c.jti = r.jti
                    return c
                }, now: now)
            if var t = transmitters[r.transmitter] {
                if r.verified {
                    t.verified = true
                    t.status = "enabled"
                }
                if let status = r.status { t.status = status }
                transmitters[r.transmitter] = t
            }
            return true
        }
    }

    private func count(_ name: String, _ set: SecurityEventToken, _ result: Result) {
        let event = set.event.type.configName ?? Self.streamEventName(set.event.type)
        counts["\(name)\u{0}\(event)\u{0}\(result.rawValue)", default: 0] += 1
    }

    /// Requests refused for a revocation, by route: `tokengate_ssf_revoked_requests_total`.
    private var revokedRequests: [String: Int] = [:]

    func countRevoked(route: String) { lock.withLock { revokedRequests[route, default: 0] += 1 } }

    /// Counts a SET the push endpoint refused before it could be applied.
    func refused(_ name: String) {
        lock.withLock { counts["\(name)\u{0}unknown\u{0}refused", default: 0] += 1 }
    }

    static func streamEventName(_ type: SecurityEventType) -> String {
        switch type {
        case .verification: "verification"
        case .streamUpdated: "stream-updated"
        default: "other"
        }
    }

    /// A copy of the revocations and the version it is at.
    func revocations() -> (table: RevocationTable, version: Int) {
        lock.withLock { (table, version.load(ordering: .acquiring)) }
    }

    /// Drops what no longer stands (the main loop calls it now and then).
    func purge(now: Double) {
        lock.withLock {
            let before = table.count
            table.purge(now: Int64(now))
            seen = seen.filter { $0.value > now }
            if table.count != before { version.add(1, ordering: .releasing) }
        }
    }

    /// `tokengate_ssf_events_total{transmitter,event,result}`, and the standing revocations.
    var metricsText: String {
        let (counts, standing, names, revoked) = lock.withLock {
            (self.counts, table.count, transmitters.keys.sorted(), revokedRequests)
        }
        guard !names.isEmpty else { return "" }
        var out = PrometheusText()
        out.family(
            "tokengate_ssf_events_total", .counter,
            help: "Security events pushed, by transmitter, event and result (applied, duplicate, ignored, refused).")
        for (key, n) in counts.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
            out.sample(
                "tokengate_ssf_events_total", [("transmitter", parts[0]), ("event", parts[1]), ("result", parts[2])], n)
        }
        out.labelled(
            "tokengate_ssf_revoked_requests_total", .counter, help: "Requests refused for a Shared Signals revocation.",
            label: "route", revoked.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) })
        out.family("tokengate_ssf_revocations", .gauge, help: "Subjects with a standing revocation.")
        out.sample("tokengate_ssf_revocations", [], standing)
        return out.text
    }
}

/// A worker's copy of the process's revocations: checked on every token and session request
/// with no lock, and taken again only when the hub's version has moved.
final class RevocationSnapshot {
    private let hub: SharedSignalsHub
    private var table: RevocationTable
    private var version: Int

    init(hub: SharedSignalsHub) {
        self.hub = hub
        (table, version) = hub.revocations()
    }

    /// Whether any revocation stands (this worker's copy taken again first if it moved): one
    /// atomic load on a request when none does.
    var standing: Bool {
        if hub.version.load(ordering: .acquiring) != version { (table, version) = hub.revocations() }
        return !table.isEmpty
    }

    /// The `jti` of the event behind a refusal `check` gave.
    func jti(sub: String?, email: String?, issuer: String, iat: Int64?, sid: String?, now: Int64) -> String? {
        table.jti(sub: sub, email: email, issuer: issuer, iat: iat, sid: sid, now: now)
    }

    func check(sub: String?, email: String?, issuer: String, iat: Int64?, sid: String?, now: Int64)
        -> RevocationTable.Revoked?
    {
        if hub.version.load(ordering: .acquiring) != version { (table, version) = hub.revocations() }
        return table.check(sub: sub, email: email, issuer: issuer, iat: iat, sid: sid, now: now)
    }
}
