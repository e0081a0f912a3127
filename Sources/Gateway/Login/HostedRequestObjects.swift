import Foundation
import JOSE
import Reactor

/// Where hosted request objects live: this process, or Redis (replicas behind one URL: the AS
/// may fetch from any of them).
protocol RequestObjectHost: AnyObject {
    /// Stores `jwt`; `done` gets the id to put in the URL (nil: too many pending, or the
    /// store failed).
    func host(_ jwt: String, done: @escaping (String?) -> Void)
    /// The object at `id`, removed: a second fetch finds nothing.
    func take(_ id: String, done: @escaping (String?) -> Void)
}

/// Request objects the gateway hosts for `request_mode: request_uri` (RFC 9101 §5.2): each at
/// an unguessable URL (256 random bits), served once, for a short time — the AS fetches it
/// right after the browser arrives; nobody else should ever see it. Shared by the workers:
/// `@unchecked Sendable` because `objects` is read and written only under `lock` (the rest
/// is constant).
final class HostedRequestObjects: RequestObjectHost, @unchecked Sendable {
    private let lock = NSLock()
    private var objects: [String: (jwt: String, until: Double)] = [:]
    let lifetime: Double
    private let capacity: Int

    init(lifetime: Double = 60, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// Stores `jwt`; the id to put in the URL, or nil when too many are pending.
    func host(_ jwt: String) -> String? {
        let now = ProcessInfo.processInfo.systemUptime
        let id = Base64URL.encode(SecureRandom.bytes(32))
        return lock.withLock {
            if objects.count >= capacity { objects = objects.filter { $0.value.until > now } }
            guard objects.count < capacity else { return nil }
            objects[id] = (jwt, now + lifetime)
            return id
        }
    }

    func host(_ jwt: String, done: @escaping (String?) -> Void) { done(host(jwt)) }
    func take(_ id: String, done: @escaping (String?) -> Void) { done(take(id)) }

    /// The object at `id`, removed: a second fetch finds nothing.
    func take(_ id: String) -> String? {
        let now = ProcessInfo.processInfo.systemUptime
        return lock.withLock {
            guard let o = objects.removeValue(forKey: id), o.until > now else { return nil }
            return o.jwt
        }
    }
}

/// Hosted request objects in Redis: `SET EX` when made, `GETDEL` when fetched (single use in
/// one step, whichever replica the AS asks). Like every value there, sealed with the session
/// keys (a request object carries the login's state and nonce); the key is a digest of the id
/// (the URL the AS fetches), and the seal is bound to it.
final class RedisRequestObjects: RequestObjectHost {
    private let client: Redis
    private let prefix: String
    private let sealer: CookieSealer
    let lifetime = 60

    init(client: Redis, prefix: String, sealer: CookieSealer) {
        self.client = client
        self.prefix = prefix
        self.sealer = sealer
    }

    private func key(_ digest: String) -> String { "\(prefix)request-object:\(digest)" }
    private static func purpose(_ digest: String) -> String { "request-object:\(digest)" }

    func host(_ jwt: String, done: @escaping (String?) -> Void) {
        let id = Base64URL.encode(SecureRandom.bytes(32))
        let digest = RedisSessionStore.digest(id)
        let sealed = sealer.seal(Array(jwt.utf8), purpose: Self.purpose(digest))
        client.send(["SET", key(digest), sealed, "EX", String(lifetime), "NX"]) { result in
            if case .success(.status("OK")) = result { done(id) } else { done(nil) }
        }
    }

    func take(_ id: String, done: @escaping (String?) -> Void) {
        guard id.utf8.count == 43, Base64URL.decode(id)?.count == 32 else {
            done(nil)
            return
        }
        let digest = RedisSessionStore.digest(id)
        client.send(["GETDEL", key(digest)]) { [sealer] result in
            guard case .success(.bulk(let b)) = result,
                let jwt = sealer.open(String(decoding: b, as: UTF8.self), purpose: Self.purpose(digest))
            else {
                done(nil)
                return
            }
            done(String(decoding: jwt, as: UTF8.self))
        }
    }
}
