import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import OAuth

/// What a replica writes to the Redis store's revocation log and another applies: the record
/// opens only under the same `session.keys` and holds no subject in the clear; a record is
/// applied once, and never by the process that wrote it.
@Suite("Shared Signals: the revocation log's records")
struct RevocationRecordTests {
    static let key = "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="
    let now = 1_700_000_000.0

    func config(key: String = Self.key) throws -> GatewayConfig {
        try ConfigParser.parse(
            yaml: """
                session: { keys: ["\(key)"] }
                issuers:
                  corp: { issuer: "https://idp.example.com", jwks_file: /dev/null, audiences: [api] }
                shared_signals:
                  tx: { issuer: "https://tx.example", issuers: [corp], endpoint_url: "https://gw.example/.ssf/events" }
                upstreams: { a: { url: "http://127.0.0.1:1" } }
                routes:
                  - { match: { path_prefix: / }, upstream: a, auth: none }
                """, environment: [:], baseDirectory: "/", cores: 2
        ).get()
    }

    func hub(_ cfg: GatewayConfig) -> SharedSignalsHub {
        let hub = SharedSignalsHub()
        hub.apply(cfg, pushSecret: SharedSignalsService.pushSecret(cfg))
        return hub
    }

    func revocation(_ sub: String, jti: String = "set-1", at: Int64) -> SecurityEventToken {
        let event = SecurityEvent(
            type: .sessionRevoked, uri: SecurityEventType.caep + "session-revoked",
            subject: .issSub(iss: "https://idp.example.com", sub: sub), timestamp: at, state: nil, status: nil)
        return SecurityEventToken(jti: jti, iat: at, event: event, txn: nil)
    }

    @Test func aRecordOpensUnderTheSameKeysOnlyAndHidesItsSubjects() throws {
        let cfg = try config()
        let writer = hub(cfg)
        let record = try #require(writer.record(for: revocation("alice", at: Int64(now) - 5), from: "tx", now: now))
        #expect(record.changes.count == 1 && record.changes[0].subject == .sub("alice"))
        #expect(record.changes[0].issuer == "corp" && record.changes[0].until == Int64(now) + 86_400)
        let sealed = record.sealed(by: try #require(writer.storeKeys).sealer)
        #expect(
            !sealed.contains("alice")
                && !(Base64URL.decode(sealed).map { String(decoding: $0, as: UTF8.self) } ?? "").contains("alice"))
        let reader = hub(try config())
        #expect(RevocationRecord.open(sealed, with: try #require(reader.storeKeys).sealer) == record)
        let stranger = hub(try config(key: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="))
        #expect(RevocationRecord.open(sealed, with: try #require(stranger.storeKeys).sealer) == nil)
        // A byte changed is no record.
        var bytes = try #require(Base64URL.decode(sealed))
        bytes[bytes.count / 2] ^= 1
        #expect(RevocationRecord.open(Base64URL.encode(bytes), with: try #require(reader.storeKeys).sealer) == nil)
    }

    @Test func anotherReplicasRecordIsAppliedOnceAndOurOwnNotAgain() throws {
        let cfg = try config()
        let a = hub(cfg)
        let b = hub(cfg)
        let event = revocation("alice", at: Int64(now) - 5)
        let record = try #require(a.record(for: event, from: "tx", now: now))
        #expect(a.apply(event, from: "tx", now: now) == .applied)
        #expect(!a.apply(logged: record, now: now))  // its own: applied before it was answered, not again
        #expect(a.record(for: event, from: "tx", now: now) == nil)  // applied here before
        let before = b.version.load(ordering: .acquiring)
        #expect(b.apply(logged: record, now: now))
        #expect(!b.apply(logged: record, now: now))
        #expect(b.version.load(ordering: .acquiring) == before + 1)
        let snapshot = RevocationSnapshot(hub: b)
        #expect(
            snapshot.check(sub: "alice", email: nil, issuer: "corp", iat: Int64(now) - 10, sid: nil, now: Int64(now))
                == .revoked)
        // The same SET pushed to b afterwards is a duplicate there: it changes nothing more.
        #expect(b.record(for: event, from: "tx", now: now) == nil)
        #expect(b.apply(event, from: "tx", now: now) == .duplicate)
    }

    @Test func aSETAnotherReplicaStoredFirstIsStillAppliedHere() throws {
        // The store said "duplicate": this replica answers 202 (or acks), and may never read
        // the other's record (its answer was lost, or it skipped past it): it applies it too.
        let c = hub(try config())
        let event = revocation("bob", jti: "set-2", at: Int64(now) - 5)
        #expect(c.duplicate(event, from: "tx", now: now) == .duplicate)
        let snapshot = RevocationSnapshot(hub: c)
        #expect(
            snapshot.check(sub: "bob", email: nil, issuer: "corp", iat: Int64(now) - 10, sid: nil, now: Int64(now))
                == .revoked)
        // Its record, read later, changes nothing more.
        let other = hub(try config())
        let record = try #require(other.record(for: event, from: "tx", now: now))
        #expect(!c.apply(logged: record, now: now))
    }

    @Test func aVerificationAndAStreamUpdateTravelAsTheStreamsState() throws {
        let cfg = try config()
        let a = hub(cfg)
        let b = hub(cfg)
        let verification = SecurityEventToken(
            jti: "v-1", iat: Int64(now),
            event: SecurityEvent(
                type: .verification, uri: "https://schemas.openid.net/secevent/ssf/event-type/verification",
                subject: nil, timestamp: nil, state: "s", status: nil), txn: nil)
        let record = try #require(a.record(for: verification, from: "tx", now: now))
        #expect(record.verified && record.changes.isEmpty)
        #expect(b.apply(logged: record, now: now))
        #expect(b.transmitter(named: "tx")?.verified == true)
        // An event that changes nothing here is not written at all.
        let ignored = SecurityEventToken(
            jti: "o-1", iat: Int64(now),
            event: SecurityEvent(
                type: .other("https://example.com/other"), uri: "https://example.com/other", subject: nil,
                timestamp: nil, state: nil, status: nil),
            txn: nil)
        #expect(a.record(for: ignored, from: "tx", now: now) == nil)
    }

    @Test func aRedisStoreWithoutSessionKeysIsRefused() {
        let yaml = """
            store: { url: "redis://127.0.0.1:6379/0" }
            issuers:
              corp: { issuer: "https://idp.example.com", jwks_file: /dev/null, audiences: [api] }
            shared_signals:
              tx: { issuer: "https://tx.example", issuers: [corp], endpoint_url: "https://gw.example/.ssf/events" }
            upstreams: { a: { url: "http://127.0.0.1:1" } }
            routes:
              - { match: { path_prefix: / }, upstream: a, auth: none }
            """
        guard case .failure(let e) = ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 2)
        else {
            Issue.record("accepted")
            return
        }
        #expect(e.description.contains("session.keys must be set"), "\(e.description)")
    }
}
