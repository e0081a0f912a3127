import Glibc

/// Byte work on `Span<UInt8>` for the modules above the engine: the engine hands out field
/// names and values, and the gateway scans strings, as spans (bounds-checked views that
/// cannot outlive their bytes), and these few operations run at the speed of the C library
/// (`memchr`, `memcmp`, a copy in one piece) without a raw pointer leaving Reactor.
extension Span where Element == UInt8 {
    /// The index of the first `byte` at or after `from`, or nil (`memchr`: a session cookie
    /// is kilobytes long, and a byte loop costs several instructions a byte).
    public func firstIndex(of byte: UInt8, from: Int = 0) -> Int? {
        precondition(from >= 0, "negative start")
        guard from < count else { return nil }
        return withUnsafeBufferPointer { b in
            guard let base = b.baseAddress, let hit = memchr(base + from, Int32(byte), b.count - from) else {
                return nil
            }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Whether `byte` occurs.
    public func contains(_ byte: UInt8) -> Bool { firstIndex(of: byte) != nil }

    /// Whether `other` holds the same bytes (`memcmp`).
    public func elementsEqual(_ other: Span<UInt8>) -> Bool {
        guard count == other.count else { return false }
        guard count > 0 else { return true }
        return withUnsafeBufferPointer { a in
            other.withUnsafeBufferPointer { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }
}

extension Array where Element == UInt8 {
    /// A copy of `bytes`.
    public init(_ bytes: Span<UInt8>) {
        self = bytes.withUnsafeBufferPointer { Array($0) }
    }

    /// Appends a copy of `bytes`, in one piece.
    public mutating func append(copying bytes: Span<UInt8>) {
        bytes.withUnsafeBufferPointer { append(contentsOf: $0) }
    }
}

extension String {
    /// The text of UTF-8 `bytes`, ill-formed sequences replaced by U+FFFD (as
    /// `String(decoding:as:)` does).
    public init(decodingUTF8 bytes: Span<UInt8>) {
        self = bytes.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
    }
}
