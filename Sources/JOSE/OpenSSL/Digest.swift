internal import COpenSSL
internal import CShim

/// SHA-2 digests: SHA-256 through OpenSSL's SHA-256 functions on a stack context (it runs on
/// every DPoP request, twice), the others through one-shot EVP_Digest.
public enum Digest: Sendable {
    case sha256, sha384, sha512

    var md: OpaquePointer {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }

    public var size: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    public func hash<C: Collection>(_ data: C) -> [UInt8] where C.Element == UInt8 {
        if let out = data.withContiguousStorageIfAvailable({ hash(bytes: UnsafeRawBufferPointer($0)) }) {
            return out
        }
        return Array(data).withUnsafeBytes { hash(bytes: $0) }
    }

    /// The digest of `bytes` (no copy of them).
    public func hash(bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { out, initialized in
            if self == .sha256 {
                tg_sha256(bytes.baseAddress, bytes.count, out.baseAddress)
            } else {
                var len: UInt32 = 0
                let ok = EVP_Digest(bytes.baseAddress, bytes.count, out.baseAddress, &len, md, nil)
                precondition(ok == 1 && Int(len) == size, "EVP_Digest failed")
            }
            initialized = size
        }
    }

    /// The digest of `bytes` (no copy of them).
    public func hash(_ bytes: Span<UInt8>) -> [UInt8] {
        bytes.withUnsafeBytes { hash(bytes: $0) }
    }

    /// The digest of a string's UTF-8 bytes.
    public func hash(utf8 text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { hash(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// Random bytes from OpenSSL's CSPRNG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        precondition(RAND_bytes(&out, Int32(count)) == 1, "RAND_bytes failed")
        return out
    }
}
