import JOSE
import Reactor

/// An authorization server's answers shared by every worker and replica through Redis: an
/// answer one replica got is not asked for again by the others while it is fresh. Two
/// kinds use it: introspection answers (RFC 7662 §2.2 bodies) and exchanged tokens (RFC 8693
/// §2.2.1 bodies). What is kept is the AS's answer itself with the time it stops counting —
/// each reader judges it again under its own config, so a config change applies to cached
/// answers too, and nothing lives longer than the replica that asked would have kept it.
///
/// The key is a SHA-256 digest of what names the answer (issuer, endpoint, token …: a Redis
/// reader learns no token); the value is sealed with the session keys under a purpose bound
/// to the kind and that key, so a Redis writer can neither read nor forge an answer, nor move
/// one onto another token's key or from one kind to the other. A cache only: a miss, an
/// unreadable value or a Redis failure means asking the AS.
final class SharedAnswerCache {
    /// The two kinds of answer, each under its own key space and sealing purpose.
    enum Kind: String {
        case introspection
        case exchange
    }

    private let client: Redis
    private let prefix: String
    private let kind: Kind
    /// Set from the config (the session keys may change on reload).
    var sealer: CookieSealer?

    init(client: Redis, prefix: String, kind: Kind) {
        self.client = client
        self.prefix = prefix
        self.kind = kind
    }

    static func digest(_ key: String) -> String { RedisSessionStore.digest(key) }
    private func purpose(_ digest: String) -> String { "\(kind.rawValue):\(digest)" }

    /// The AS's answer for `key`, until when it counts, and when it was given (nil from a
    /// replica that did not say); nil on a miss.
    func get(_ key: String, now: Int64, done: @escaping ((body: [UInt8], until: Int64, at: Int64?)?) -> Void) {
        guard let sealer else {
            done(nil)
            return
        }
        let digest = Self.digest(key)
        let purpose = purpose(digest)
        client.send(["GET", "\(prefix)\(kind.rawValue):\(digest)"]) { result in
            guard case .success(.bulk(let bytes)) = result,
                let plain = sealer.open(String(decoding: bytes, as: UTF8.self), purpose: purpose),
                let newline = plain.firstIndex(of: UInt8(ascii: "\n"))
            else {
                done(nil)
                return
            }
            // "until" or "until at".
            let times = String(decoding: plain[..<newline], as: UTF8.self).split(separator: " ").map { Int64($0) }
            guard times.count <= 2, let until = times.first ?? nil, until > now else {
                done(nil)
                return
            }
            done((Array(plain[(newline + 1)...]), until, times.count == 2 ? times[1] : nil))
        }
    }

    /// Keeps the AS's `body` for `key` until `until` (never past it: Redis expires the key).
    func put(_ key: String, body: [UInt8], until: Int64, now: Int64) {
        // A sealed value over 16 KiB would not open (CookieSealer's bound); answers are small.
        guard let sealer, until > now, body.count <= 11 * 1024 else { return }
        let digest = Self.digest(key)
        let sealed = sealer.seal(Array("\(until) \(now)\n".utf8) + body, purpose: purpose(digest))
        client.send(["SET", "\(prefix)\(kind.rawValue):\(digest)", sealed, "EX", String(until - now)]) { _ in }
    }
}
