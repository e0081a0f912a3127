import JOSE
import Reactor

/// Introspection answers shared by every worker and replica through Redis: a token
/// introspected on one replica is not introspected again on the others while its answer is
/// fresh. What is kept is the AS's answer itself (RFC 7662 §2.2 body) with the time it stops
/// counting — each reader judges it again under its own issuer policy, so a config change
/// applies to cached answers too, and nothing lives longer than the replica that asked would
/// have kept it.
///
/// The key is a SHA-256 digest of issuer and token (a Redis reader learns no token); the
/// value is sealed with the session keys under a purpose bound to that key, so a Redis writer
/// can neither read nor forge an answer, nor move an "active" answer onto another token's key.
/// A cache only: a miss, an unreadable value or a Redis failure means asking the AS.
final class SharedIntrospectionCache {
    private let client: Redis
    private let prefix: String
    /// Set from the config (the session keys may change on reload).
    var sealer: CookieSealer?

    init(client: Redis, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    static func digest(_ key: String) -> String { RedisSessionStore.digest(key) }
    static func purpose(_ digest: String) -> String { "introspection:\(digest)" }

    /// The AS's answer for `key` (issuer and token) and until when it counts; nil on a miss.
    func get(_ key: String, now: Int64, done: @escaping ((body: [UInt8], until: Int64)?) -> Void) {
        guard let sealer else {
            done(nil)
            return
        }
        let digest = Self.digest(key)
        client.send(["GET", "\(prefix)introspection:\(digest)"]) { result in
            guard case .success(.bulk(let bytes)) = result,
                let plain = sealer.open(String(decoding: bytes, as: UTF8.self), purpose: Self.purpose(digest)),
                let newline = plain.firstIndex(of: UInt8(ascii: "\n")),
                let until = Int64(String(decoding: plain[..<newline], as: UTF8.self)), until > now
            else {
                done(nil)
                return
            }
            done((Array(plain[(newline + 1)...]), until))
        }
    }

    /// Keeps the AS's `body` for `key` until `until` (never past it: Redis expires the key).
    func put(_ key: String, body: [UInt8], until: Int64, now: Int64) {
        // A sealed value over 16 KiB would not open (CookieSealer's bound); answers are small.
        guard let sealer, until > now, body.count <= 11 * 1024 else { return }
        let digest = Self.digest(key)
        let sealed = sealer.seal(Array("\(until)\n".utf8) + body, purpose: Self.purpose(digest))
        client.send(["SET", "\(prefix)introspection:\(digest)", sealed, "EX", String(until - now)]) { _ in }
    }
}
