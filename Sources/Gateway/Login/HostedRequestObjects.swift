import Foundation
import JOSE

/// Request objects the gateway hosts for `request_mode: request_uri` (RFC 9101 §5.2): each at
/// an unguessable URL (256 random bits), served once, for a short time — the AS fetches it
/// right after the browser arrives; nobody else should ever see it. Shared by the workers.
final class HostedRequestObjects: @unchecked Sendable {
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

    /// The object at `id`, removed: a second fetch finds nothing.
    func take(_ id: String) -> String? {
        let now = ProcessInfo.processInfo.systemUptime
        return lock.withLock {
            guard let o = objects.removeValue(forKey: id), o.until > now else { return nil }
            return o.jwt
        }
    }
}
