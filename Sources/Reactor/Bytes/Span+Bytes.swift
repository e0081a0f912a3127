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

    /// Appends a copy of `bytes`, in one piece. Inlinable: callers append many short
    /// pieces (log lines), and a call across the module for each would cost more than the copy.
    @inlinable
    public mutating func append(copying bytes: Span<UInt8>) {
        bytes.withUnsafeBufferPointer { append(contentsOf: $0) }
    }
}

extension OutputSpan where Element == UInt8 {
    /// Appends a copy of `bytes` in one piece (`memcpy`), into capacity the caller reserved
    /// (`Array.append(addingCapacity:initializingWith:)`): past it, a trap, as `append(_:)`.
    /// Always inlined: a log line is some twenty such pieces, most a few bytes long.
    @inlinable @inline(__always)
    public mutating func append(copying bytes: Span<UInt8>) {
        let n = bytes.count
        precondition(n <= freeCapacity, "OutputSpan capacity overflow")
        guard n > 0 else { return }
        bytes.withUnsafeBufferPointer { source in
            withUnsafeMutableBufferPointer { buffer, initialized in
                (buffer.baseAddress! + initialized).initialize(from: source.baseAddress!, count: n)
                initialized += n
            }
        }
    }

    /// Appends a literal's bytes. Always inlined: the literal's address and length are then
    /// constants, and the copy a few moves rather than a call.
    @inlinable @inline(__always)
    public mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { source in
            let n = source.count
            precondition(n <= freeCapacity, "OutputSpan capacity overflow")
            guard n > 0 else { return }
            withUnsafeMutableBufferPointer { buffer, initialized in
                (buffer.baseAddress! + initialized).initialize(from: source.baseAddress!, count: n)
                initialized += n
            }
        }
    }
}

extension String {
    /// The text of UTF-8 `bytes`, ill-formed sequences replaced by U+FFFD (as
    /// `String(decoding:as:)` does).
    public init(decodingUTF8 bytes: Span<UInt8>) {
        self = bytes.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
    }
}
