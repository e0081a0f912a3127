public import JOSE

/// Server-provided DPoP nonces (RFC 9449 §8, §9) without server state: a nonce is a time
/// slot and an HMAC over it, so every replica that holds the same key accepts every other
/// replica's nonces, and nothing is stored per client.
///
/// Time is cut into slots of half the lifetime. A nonce names the slot it was issued in and
/// is accepted while that slot or the next one runs, so it lives between lifetime/2 and
/// lifetime; a nonce from an earlier slot than the current one is "stale" and the gateway
/// hands out a fresh one on the next successful response (§8.2), before it expires.
public struct DPoPNonces: Sendable {
    /// First key issues; every key verifies (rotation: add the new key first, drop the old
    /// one after a lifetime).
    public let keys: [MACKey]
    public let lifetime: Int64
    public let leeway: Int64
    static let context = Array("tokengate dpop-nonce v1".utf8)
    static let tagSize = 16

    public init(keys: [MACKey], lifetime: Int64 = 300, leeway: Int64 = 5) {
        precondition(!keys.isEmpty, "DPoP nonces need a key")
        self.keys = keys
        self.lifetime = max(lifetime, 2)
        self.leeway = leeway
    }

    var slotLength: Int64 { lifetime / 2 }

    /// A nonce for the current slot.
    public func issue(now: Int64) -> String {
        let slot = now / slotLength
        let slotBytes = Self.bytes(slot)
        let tag = keys[0].authenticate(Self.context + slotBytes).prefix(Self.tagSize)
        return Base64URL.encode(slotBytes + tag)
    }

    public enum Verdict: Equatable, Sendable {
        /// `issuedAt`: the start of the nonce's slot (the server-managed timestamp of §4.3
        /// check 11); `expiresAt`: when it stops being accepted; `stale`: a newer one exists.
        case valid(issuedAt: Int64, expiresAt: Int64, stale: Bool)
        case invalid
    }

    public func check(_ nonce: String, now: Int64) -> Verdict {
        guard nonce.utf8.count == 32, let raw = Base64URL.decode(nonce), raw.count == 8 + Self.tagSize else {
            return .invalid
        }
        let slotBytes = Array(raw[0..<8])
        let tag = Array(raw[8...])
        guard keys.contains(where: { $0.isValid(tag, for: Self.context + slotBytes) }) else { return .invalid }
        let slot = slotBytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let issuedAt = slot &* slotLength
        let expiresAt = issuedAt &+ lifetime
        // Not from the future (beyond clock skew between replicas), and not past its life.
        guard slot >= 0, issuedAt <= now + leeway, now < expiresAt else { return .invalid }
        return .valid(issuedAt: issuedAt, expiresAt: expiresAt, stale: slot < now / slotLength)
    }

    static func bytes(_ v: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * (7 - $0))) }
    }
}
