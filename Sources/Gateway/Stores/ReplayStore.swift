import JOSE

/// RFC 9449 §11.1 replay defence: a proof's id is remembered until the proof would no longer
/// be accepted anyway, and an id seen twice is a replay. Implementations: this process's
/// memory (`MemoryReplayCache`, shared by the workers) or Redis (`RedisReplayStore`, shared
/// by replicas). Both pass the same conformance suite.
protocol ReplayStore: AnyObject {
    /// Records `id` until `until` (Unix seconds). `done` runs once, on the caller's loop.
    func claim(_ id: ReplayID, until: Int64, now: Int64, done: @escaping (ReplayVerdict) -> Void)
}

enum ReplayVerdict: Equatable {
    /// First use: the request may proceed.
    case fresh
    case replayed
    /// The store could not be reached (down, timed out): the caller fails closed — or open,
    /// where the operator chose availability.
    case unavailable(String)
    /// The store answered but would not record it (full, or an error reply such as OOM):
    /// always refused — failing open here would let a flood of proofs switch replay defence off.
    case refused(String)
}

/// A proof's identity in the replay store: SHA-256 over the key thumbprint and the `jti`,
/// cut to 128 bits — fixed size whatever the client sent, and one client's `jti` can never
/// collide with another's.
struct ReplayID: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A DPoP proof's `jti` under its key's thumbprint (RFC 9449 §11.1). The input is put
    /// together in stack memory (it is hashed on every DPoP request).
    init(jkt: String, jti: String) {
        var jkt = jkt
        var jti = jti
        let n = jkt.utf8.count + 1 + jti.utf8.count
        self = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: n) { input in
            jkt.withUTF8 { k in
                jti.withUTF8 { j in
                    _ = UnsafeMutableBufferPointer(rebasing: input[..<k.count]).initialize(from: k)
                    input[k.count] = 0
                    _ = UnsafeMutableBufferPointer(rebasing: input[(k.count + 1)...]).initialize(from: j)
                }
            }
            return ReplayID(digestOf: UnsafeRawBufferPointer(input))
        }
    }

    /// A back-channel logout token's `jti` under its issuer (OIDC Back-Channel Logout 1.0 §2.6
    /// step 10): a namespace of its own. The leading 0x01 is never the first byte of a
    /// thumbprint (base64url text), so no logout id can equal a proof's.
    init(logoutTokenOf issuer: String, jti: String) {
        self.init(digestOf: [1] + Array(issuer.utf8) + [0] + Array(jti.utf8))
    }

    private init(digestOf bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { ReplayID(digestOf: $0) }
    }

    private init(digestOf bytes: UnsafeRawBufferPointer) {
        let digest = Digest.sha256.hash(bytes: bytes)
        high = digest[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low = digest[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// 22 base64url characters, for store keys.
    var text: String {
        let bytes =
            (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        return Base64URL.encode(bytes)
    }
}
