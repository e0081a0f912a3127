import Foundation
import JOSE
import OAuth
import Synchronization

/// `auth: client_assertion_file`: the client assertion (RFC 7523 §2.2) is a JWT someone else
/// issues and rotates — a Kubernetes projected service-account token, an Azure or GKE
/// workload-identity token — read from a file, as it is at the moment of the request.
///
/// The file is looked at (`stat`, which follows the kubelet's `..data` symlink swap) at most
/// once a second, and read again when its identity changes or when the assertion held is
/// within `margin` of its `exp` (read, not verified: the AS verifies it). An assertion that
/// cannot be read, is not a JWT with `exp`, or has expired is refused with a reason for the
/// log; the caller answers 503 and sends nothing, never a stale assertion. Shared by the
/// workers (one per client registration), so its state is behind a lock.
final class ClientAssertionFile: ClientAssertionSource {
    /// Why no assertion can be sent now. The log gets `description`; the wire only a 503.
    struct Unavailable: Error, Equatable, CustomStringConvertible {
        enum Code: String, Sendable {
            /// The file is missing, unreadable, empty or too large.
            case unreadable
            /// Its content is not a JWS compact serialization with a numeric `exp` (RFC 7523 §3
            /// item 4: "The JWT MUST contain an exp claim").
            case notAJWT = "not_a_jwt"
            /// Its `exp` has passed (or is within `margin`), even after reading the file again.
            case expired
        }
        let code: Code
        let path: String
        let reason: String

        var description: String { "client assertion file \(path): \(code.rawValue): \(reason)" }
    }

    /// Seconds before `exp` at which an assertion is no longer sent: it would expire on its
    /// way to the AS, or on an AS whose clock runs a little ahead.
    static let margin: Int64 = 5
    /// A projected token is about 1 KB; anything far larger is not one.
    static let maxBytes = 64 << 10

    let path: String

    private struct Held {
        var stamp: FileStamp
        var assertion: String
        var exp: Int64
        /// The second the file was last looked at.
        var checked: Int64
    }
    private let held = Mutex<Held?>(nil)

    init(path: String) {
        self.path = path
    }

    /// The file's current assertion at `now` (seconds since the epoch).
    func assertion(now: Int64) throws -> String {
        try held.withLock { (held: inout Held?) throws(Unavailable) -> String in
            if let h = held, h.exp - Self.margin > now {
                if h.checked == now { return h.assertion }
                let stamp = FileStamp(path: path)
                if stamp == h.stamp && stamp.inode != 0 {
                    held?.checked = now
                    return h.assertion
                }
            }
            // New, changed, or about to expire: read it again.
            held = nil
            let stamp = FileStamp(path: path)
            let (assertion, exp) = try Self.read(path)
            guard exp - Self.margin > now else {
                throw Unavailable(
                    code: .expired, path: path, reason: "exp \(exp) is past (now \(now), margin \(Self.margin) s)")
            }
            held = Held(stamp: stamp, assertion: assertion, exp: exp, checked: now)
            return assertion
        }
    }

    /// The file's content, trimmed, and its `exp`; nothing is verified.
    static func read(_ path: String) throws(Unavailable) -> (assertion: String, exp: Int64) {
        let bytes: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            bytes = try handle.read(upToCount: maxBytes + 1) ?? Data()
        } catch {
            throw Unavailable(code: .unreadable, path: path, reason: "cannot be read (\(error.localizedDescription))")
        }
        guard bytes.count <= maxBytes else {
            throw Unavailable(code: .unreadable, path: path, reason: "larger than \(maxBytes) bytes")
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw Unavailable(code: .unreadable, path: path, reason: "is empty") }
        guard let claims = try? CompactJWS(text).claims() else {
            throw Unavailable(code: .notAJWT, path: path, reason: "is not a JWT (JWS compact serialization)")
        }
        guard let exp = claims["exp"]?.numericDate else {
            throw Unavailable(code: .notAJWT, path: path, reason: "has no exp claim that is a date (RFC 7519 §2)")
        }
        return (text, exp)
    }
}
