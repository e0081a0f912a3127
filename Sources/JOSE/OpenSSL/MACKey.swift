internal import COpenSSL

/// A secret key for HMAC (RFC 2104) through OpenSSL: for values the gateway issues and later
/// takes back itself (stateless DPoP nonces), where a signature would be overkill.
public struct MACKey: Sendable {
    let secret: [UInt8]
    let digest: Digest

    /// `secret` must be at least as long as the digest output (RFC 2104 §3, RFC 7518 §3.2).
    public init?(secret: [UInt8], digest: Digest = .sha256) {
        guard secret.count >= digest.size else { return nil }
        self.secret = secret
        self.digest = digest
    }

    /// HMAC of `message`.
    public func authenticate(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digest.size)
        var len: UInt32 = 0
        let ok = secret.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                HMAC(digest.md, k.baseAddress, Int32(k.count), m.baseAddress, m.count, &out, &len)
            }
        }
        precondition(ok != nil && Int(len) == digest.size, "HMAC failed")
        return out
    }

    /// Whether `tag` is the HMAC of `message`, or its first `tag.count` bytes (at least 16):
    /// compared in constant time, so the position of the first wrong byte is never timed.
    public func isValid(_ tag: [UInt8], for message: [UInt8]) -> Bool {
        let mac = authenticate(message)
        guard tag.count >= 16, tag.count <= mac.count else { return false }
        return ConstantTime.equals(Array(mac.prefix(tag.count)), tag)
    }
}

/// Comparisons of secrets that take the same time whatever the content.
public enum ConstantTime {
    /// Equal length and equal bytes (the length itself is not secret).
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// The same over two strings' UTF-8 bytes, in place.
    public static func equals(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                x.count == y.count && (x.isEmpty || CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) == 0)
            }
        }
    }
}
