import Foundation
import JOSE
import OAuth
import Reactor

/// What happens to one SET a transmitter delivered, by push (RFC 8935) or poll (RFC 8936):
/// verified with the transmitter's keys (refetched once on an unknown `kid`), a verification's
/// `state` checked, written to the store's log when there is one, and applied. The delivery
/// says the outcome in its own terms: a 202 or a 400, an `ack` or a `setErrs` entry.
struct SecurityEventIntake {
    enum Outcome {
        /// Applied (or a duplicate, or without effect): a 202, an `ack`.
        case accepted(SecurityEventToken, SharedSignalsHub.Result)
        /// Refused with an RFC 8935 §2.4 `err` (and `invalid_state`, SSF 1.0 §8.1.4.2).
        case refused(err: String, description: String)
        /// Not judged now: the transmitter's keys are not loaded, or the store did not take
        /// it. The transmitter delivers it again.
        case notNow(UnavailableReason, description: String, detail: String)
    }

    let hub: SharedSignalsHub
    let log: RevocationLog.Writer?
    let loop: EventLoop
    let wallClock: any WallClock

    /// `done` on `loop`. `jti`: the id a poll answer gave it (RFC 8936 §2.4 keys `sets` by
    /// `jti`): a SET that says another is refused, so no acknowledgement names another SET.
    func receive(_ token: String, from name: String, jti: String? = nil, done: @escaping (Outcome) -> Void) {
        verify(token, name, jti, retried: nil, done)
    }

    /// `retried`: whether the refetch for an unknown `kid` brought new keys (nil: not tried).
    private func verify(
        _ token: String, _ name: String, _ expected: String?, retried: Bool?, _ done: @escaping (Outcome) -> Void
    ) {
        guard let t = hub.transmitter(named: name) else {
            return done(
                .refused(err: SETRefusal.Code.accessDenied.rawValue, description: "this receiver has no such stream"))
        }
        guard let keys = t.keys else {
            return done(
                .notNow(.keysNotLoaded, description: "the transmitter's keys are not loaded yet", detail: "no keys"))
        }
        let set: SecurityEventToken
        do {
            set = try t.verifier.verify(token, keys: keys, now: Int64(wallClock.now))
        } catch {
            if error.code == .invalidKey,
                let kid = try? CompactJWS(token, maxSize: SecurityEventTokenVerifier.maxSize).header.kid,
                !keys.keys.contains(where: { $0.kid == kid })
            {
                switch retried {
                case nil:
                    if let refetch = hub.refetchKeys {
                        refetch(name) { [loop] fresh in
                            loop.execute { verify(token, name, expected, retried: fresh != nil, done) }
                        }
                        return
                    }
                case false?:
                    // The keys could not be fetched again just now (failed, or too soon after
                    // the last time): not judged, so a SET of a rotated key is not refused for
                    // good (a transmitter does not deliver a refused SET again).
                    return done(
                        .notNow(
                            .keysNotLoaded, description: "the SET's key is not among the transmitter's keys yet",
                            detail: "unknown kid; the keys were not fetched again"))
                case true?: break
                }
            }
            hub.refused(name)
            return done(.refused(err: error.code.rawValue, description: error.description))
        }
        if let expected, expected != set.jti {
            hub.refused(name)
            return done(
                .refused(err: "invalid_request", description: "the SET's jti is not the one it was given under"))
        }
        if set.event.type == .verification, let state = set.event.state, !hub.expectsState(state, of: name) {
            hub.refused(name)
            return done(
                .refused(err: "invalid_state", description: "the verification event's state is not the one asked for"))
        }
        let now = wallClock.now
        // With a Redis store, written to its log first: a revocation answered for stands on
        // every replica and outlives this process.
        guard let log, let record = hub.record(for: set, from: name, now: now) else {
            return done(.accepted(set, hub.apply(set, from: name, now: now)))
        }
        log.append(record) { [hub, wallClock] appended in
            let now = wallClock.now
            switch appended {
            case .stored: done(.accepted(set, hub.apply(set, from: name, now: now)))
            case .duplicate: done(.accepted(set, hub.duplicate(set, from: name, now: now)))
            case .failed(let why):
                done(
                    .notNow(
                        .revocationNotStored, description: "the event cannot be stored now",
                        detail: "the store failed: \(why)"))
            }
        }
    }
}
