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
/// right after the browser arrives; nobody else should ever see it. Shared by the workers.
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
/// one step, whichever replica the AS asks).
final class RedisRequestObjects: RequestObjectHost {
    private let client: Redis
    private let prefix: String
    let lifetime = 60

    init(client: Redis, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    func host(_ jwt: String, done: @escaping (String?) -> Void) {
        let id = Base64URL.encode(SecureRandom.bytes(32))
        client.send(["SET", "\(prefix)request-object:\(id)", jwt, "EX", String(lifetime), "NX"]) { result in
            if case .success(.status("OK")) = result { done(id) } else { done(nil) }
        }
    }

    func take(_ id: String, done: @escaping (String?) -> Void) {
        client.send(["GETDEL", "\(prefix)request-object:\(id)"]) { result in
            if case .success(.bulk(let b)) = result { done(String(decoding: b, as: UTF8.self)) } else { done(nil) }
        }
    }
}
