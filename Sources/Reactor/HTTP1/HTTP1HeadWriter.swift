import Glibc

/// Writes a message head into memory sized once, up front, from a bound the caller computes
/// (every head is short and its parts are known). Each piece is a plain copy: appending to a
/// growing array costs a capacity check and a generic call per piece, a dozen per head.
/// A write past the bound is a programming error and traps rather than overflow.
struct HTTP1HeadWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    init(_ base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    /// A head of at most `capacity` bytes, as an array.
    static func bytes(capacity: Int, _ write: (inout HTTP1HeadWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var writer = HTTP1HeadWriter(buffer.baseAddress!, capacity: capacity)
            write(&writer)
            initialized = writer.count
        }
    }

    /// A head of at most `capacity` bytes, written straight into `queue`'s free space (no
    /// intermediate array, no copy). Out of memory writes nothing: the same path as a failed
    /// append (the connection's write fails).
    static func append(to queue: ByteQueue, capacity: Int, _ write: (inout HTTP1HeadWriter) -> Void) {
        queue.appendInPlace(upTo: capacity) { space in
            guard let base = space.baseAddress, space.count == capacity else { return 0 }
            var writer = HTTP1HeadWriter(base.assumingMemoryBound(to: UInt8.self), capacity: capacity)
            write(&writer)
            return writer.count
        }
    }

    @inline(__always)
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(count + bytes.count <= capacity, "head bound too small")
        (base + count).update(from: from, count: bytes.count)
        count += bytes.count
    }

    /// A literal; short ones (separators, framing lines' parts) byte by byte, which costs
    /// less than a call to memcpy.
    @inline(__always)
    mutating func write(_ text: StaticString) {
        let n = text.utf8CodeUnitCount
        guard n <= 8 else { return text.withUTF8Buffer { write($0) } }
        precondition(count + n <= capacity, "head bound too small")
        let from = text.utf8Start
        for i in 0..<n { base[count + i] = from[i] }
        count += n
    }

    mutating func write(_ text: String) {
        HTTP1Bytes.withUTF8(text) { write($0) }
    }

    @inline(__always)
    mutating func write(byte: UInt8) {
        precondition(count < capacity, "head bound too small")
        base[count] = byte
        count += 1
    }

    /// `name: value CRLF`.
    @inline(__always)
    mutating func writeField(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        precondition(count + name.count + value.count + 4 <= capacity, "head bound too small")
        if let from = name.baseAddress { (base + count).update(from: from, count: name.count) }
        count += name.count
        base[count] = HTTP1Bytes.colon
        base[count + 1] = HTTP1Bytes.sp
        count += 2
        if let from = value.baseAddress { (base + count).update(from: from, count: value.count) }
        count += value.count
        base[count] = HTTP1Bytes.cr
        base[count + 1] = HTTP1Bytes.lf
        count += 2
    }

    /// Decimal digits, no sign, no padding: at most 20 bytes.
    mutating func writeDecimal(_ n: UInt64) {
        var unit: UInt64 = 1
        while unit <= n / 10 { unit *= 10 }
        var rest = n
        while unit > 0 {
            write(byte: UInt8(truncatingIfNeeded: rest / unit) + 0x30)
            rest %= unit
            unit /= 10
        }
    }
}
