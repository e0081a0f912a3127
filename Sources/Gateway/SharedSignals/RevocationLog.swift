import Foundation
import JOSE
import Logging
import Reactor

/// The revocations in a Redis store: one Redis stream (`{ssf}:log`) of sealed records, and
/// one key per applied SET (`{ssf}:jti:` and a keyed digest of its transmitter and `jti`).
/// A replica writes both in one script run before it answers 202 (or acknowledges a poll),
/// so a SET another replica applied first is a duplicate, and a revocation answered for
/// outlives a crash. Every replica reads the log from where it left off (`Reader`), and one
/// that starts later reads what still stands; records older than the longest
/// `revocation_ttl` are trimmed as new ones come.
///
/// Why a stream and not pub/sub: a replica that lost its connection for a moment reads on
/// from its last entry and misses nothing, and one log serves the start and the updates.
enum RevocationLog {
    /// The keys share the `{ssf}` hash tag: a Cluster keeps them in one slot, as the script needs.
    static func logKey(prefix: String) -> String { prefix + "{ssf}:log" }

    static func jtiKey(prefix: String, transmitter: String, jti: String, digest: MACKey) -> String {
        let mac = digest.authenticate(Array("tokengate/ssf-jti/v1\u{0}\(transmitter)\u{0}\(jti)".utf8))
        return prefix + "{ssf}:jti:" + Base64URL.encode(mac.prefix(18))
    }

    /// KEYS: the jti key, the log. ARGV: how long the jti key is kept (s), the log's oldest
    /// entry id to keep (ms), the sealed record. 1 when written, 0 when the jti was there.
    static let script = """
        if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then return 0 end
        redis.call('XADD', KEYS[2], 'MINID', '~', ARGV[2], '*', 'r', ARGV[3])
        return 1
        """

    enum Appended: Equatable {
        case stored
        /// Another replica wrote this SET first.
        case duplicate
        case failed(String)
    }

    /// A worker's (or the main loop's) writer, on its loop's Redis client.
    struct Writer {
        let client: Redis
        let prefix: String
        let hub: SharedSignalsHub
        let wallClock: any WallClock

        /// Writes `record` once; `done` on the client's loop.
        func append(_ record: RevocationRecord, done: @escaping (Appended) -> Void) {
            guard let keys = hub.storeKeys else { return done(.failed("no session keys")) }
            let jtiKey = RevocationLog.jtiKey(
                prefix: prefix, transmitter: record.transmitter, jti: record.jti, digest: keys.digest)
            let oldest = max(0, Int64((wallClock.now - hub.longestTTL) * 1000))
            let arguments = [
                "EVAL", RevocationLog.script, "2", jtiKey, RevocationLog.logKey(prefix: prefix),
                String(Int(SharedSignalsHub.seenFor)), String(oldest), record.sealed(by: keys.sealer)
            ]
            client.send(arguments) { result in
                switch result {
                case .success(.integer(1)): done(.stored)
                case .success(.integer(0)): done(.duplicate)
                case .success(.error(let e)): done(.failed("the store answered \(e.prefix(120))"))
                case .success: done(.failed("the store's answer is not the script's"))
                case .failure(let e): done(.failed(e.description))
                }
            }
        }
    }

    /// The main loop's reader: the whole log at start, then what is new every 0.2 s (each
    /// replica within a second of the 202). The request path never waits on it: records go
    /// into the hub's table, which workers copy when its version moves.
    final class Reader {
        static let interval = 0.2
        /// Small pages: a page of entries a Redis writer bloated still comes within the
        /// command's timeout, and the cursor moves on past what cannot be opened.
        static let pageSize = 128
        /// Failed reads before the first whole read after which the replica stops waiting
        /// for it (readiness goes on with a note): a log Redis refuses to give (an ACL, a
        /// key of another type) must not keep every restarted replica out of service.
        static let patience = 25

        private let client: Redis
        private let key: String
        private let hub: SharedSignalsHub
        private let log: Logger
        private let wallClock: any WallClock
        /// The last entry read; nil until the first.
        private var cursor: String?
        private var reading = false
        private var timer: LoopTimer?
        /// Whether the log has been read to its end once: until then, standing revocations may
        /// be missing (readiness waits for it).
        private(set) var caughtUp = false
        private(set) var lastError: String?
        private var failures = 0
        /// The first whole read was given up on (`patience`); the reader still tries.
        private(set) var gaveUp = false
        private(set) var unreadable = 0

        init(
            client: Redis, prefix: String, hub: SharedSignalsHub, log: Logger, wallClock: any WallClock, loop: EventLoop
        ) {
            self.client = client
            key = RevocationLog.logKey(prefix: prefix)
            self.hub = hub
            self.log = log
            self.wallClock = wallClock
            timer = LoopTimer(loop: loop, seconds: Self.interval, repeating: true) { [weak self] in self?.read() }
            read()
        }

        private func read() {
            guard !reading else { return }
            reading = true
            let start = cursor.map { "(" + $0 } ?? "-"
            client.send(["XRANGE", key, start, "+", "COUNT", String(Self.pageSize)], keys: [1]) { [weak self] result in
                guard let self else { return }
                reading = false
                switch result {
                case .success(.array(let entries)):
                    took(entries)
                    if entries.count >= Self.pageSize {
                        read()
                    } else {
                        caughtUp = true
                    }
                case .success(let other):
                    failed("XRANGE answered \(String(describing: other).prefix(120))")
                case .failure(let e):
                    failed(e.description)
                }
            }
        }

        private func took(_ entries: [RedisReply]) {
            let now = wallClock.now
            let sealer = hub.storeKeys?.sealer
            failures = 0
            if lastError != nil {
                lastError = nil
                gaveUp = false
                log.info("ssf revocation log read again")
            }
            for entry in entries {
                guard case .array(let parts) = entry, parts.count == 2, case .bulk(let id) = parts[0] else { continue }
                cursor = String(decoding: id, as: UTF8.self)
                guard case .array(let fields) = parts[1], fields.count == 2, case .bulk(let value) = fields[1],
                    let sealer, let record = RevocationRecord.open(String(decoding: value, as: UTF8.self), with: sealer)
                else {
                    // Sealed under keys this replica no longer (or never) had: not ours to apply.
                    unreadable += 1
                    continue
                }
                hub.apply(logged: record, now: now)
            }
        }

        private func failed(_ why: String) {
            failures += 1
            if !caughtUp, failures >= Self.patience {
                caughtUp = true
                gaveUp = true
                log.error(
                    "ssf revocation log not read; serving without the revocations it holds",
                    metadata: ["error": .string(why)])
            }
            if lastError == nil {
                log.warning("ssf revocation log cannot be read", metadata: ["error": .string(why)])
            }
            lastError = why
        }
    }
}
