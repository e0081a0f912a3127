internal import COpenSSL

/// SHA-2 digests (one-shot EVP_Digest).
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
        var out = [UInt8](repeating: 0, count: size)
        var len: UInt32 = 0
        let ok = Array(data).withUnsafeBufferPointer { buf in
            EVP_Digest(buf.baseAddress, buf.count, &out, &len, md, nil)
        }
        precondition(ok == 1, "EVP_Digest failed")
        return out
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
