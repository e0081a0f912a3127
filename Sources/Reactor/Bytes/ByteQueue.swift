internal import CEvent
import Glibc

/// A first-in, first-out queue of bytes: libevent's evbuffer, seen from Swift. Bytes join
/// at the end and leave from the front; moving a run of them to another queue hands over
/// the memory that holds them rather than copying (the part swift-nio's `ByteBuffer`
/// plays there). Sockets, TLS records, bodies, tunnels and HTTP/2 all go through it: with
/// `ByteQueue+Socket.swift` this is the only place that calls `evbuffer_*`.
///
/// Owns its evbuffer and frees it once, in `deinit`; `init(borrowing:)` is the one view of
/// an evbuffer owned elsewhere (a Redis bufferevent's input), which it never frees.
/// Loop-thread only, like everything that holds one.
public final class ByteQueue {
    /// Used only in this file and `ByteQueue+Socket.swift`.
    let raw: OpaquePointer
    private let owned: Bool

    public init() {
        guard let buffer = evbuffer_new() else { fatalError("evbuffer_new: out of memory") }
        raw = buffer
        owned = true
    }

    /// A view of `buffer`, whose owner outlives this queue and frees it.
    init(borrowing buffer: OpaquePointer) {
        raw = buffer
        owned = false
    }

    public convenience init(_ text: String) {
        self.init()
        append(text)
    }

    public convenience init(_ bytes: [UInt8]) {
        self.init()
        append(bytes)
    }

    deinit { if owned { evbuffer_free(raw) } }

    public var count: Int { evbuffer_get_length(raw) }
    var isEmpty: Bool { evbuffer_get_length(raw) == 0 }

    // MARK: Joining at the end

    /// Copies `bytes` in after those held. Like every append here, out of memory loses the
    /// bytes and the connection's next write fails; nothing else can be done about it.
    func append(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { _ = evbuffer_add(raw, bytes.baseAddress, bytes.count) }
    }

    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    func append(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { append($0) }
    }

    public func append(_ text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    func append(_ text: StaticString) {
        _ = evbuffer_add(raw, text.utf8Start, text.utf8CodeUnitCount)
    }

    /// Moves every byte of `other` to the end of this queue (no copy); `other` is empty after.
    func append(allOf other: ByteQueue) {
        _ = evbuffer_add_buffer(raw, other.raw)
    }

    /// Lets `fill` write up to `capacity` (> 0) bytes straight into the queue's end, and keeps
    /// the first `n` of them, where `n` is what `fill` returns (0 or less keeps none; `errno`
    /// is kept as `fill` left it). Returns `fill`'s `n`, or nil when the room could not be had
    /// or kept (out of memory). The space may be smaller than asked only if memory is short;
    /// it is never larger.
    @discardableResult
    func appendInPlace(upTo capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) -> Int? {
        var space = iovec()  // evbuffer_iovec is a macro for struct iovec
        guard evbuffer_reserve_space(raw, capacity, &space, 1) > 0 else { return nil }
        let n = fill(UnsafeMutableRawBufferPointer(start: space.iov_base, count: min(space.iov_len, capacity)))
        guard n > 0 else {
            // Reserved space that is not committed is simply not part of the queue.
            let saved = errno
            evbuffer_commit_space(raw, &space, 0)
            errno = saved
            return n
        }
        space.iov_len = n
        return evbuffer_commit_space(raw, &space, 1) == 0 ? n : nil
    }

    // MARK: Reading at the front

    /// The first contiguous run of bytes held, in place (empty when the queue is).
    var front: UnsafeRawBufferPointer {
        var vector = iovec()
        guard evbuffer_peek(raw, -1, nil, &vector, 1) > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: vector.iov_base, count: vector.iov_len)
    }

    /// The first `count` bytes made contiguous (copying only if they span pieces), in place
    /// until the queue next changes; nil when fewer are held or memory is short.
    func pullUp(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count > 0, count <= self.count, let bytes = evbuffer_pullup(raw, count) else { return nil }
        return UnsafeRawBufferPointer(start: bytes, count: count)
    }

    /// Shows the bytes in `range` (offsets from the front) in place, piece by piece as the
    /// queue holds them, without taking them, until `visit` returns false.
    func forEachPiece<E: Error>(
        in range: Range<Int>, _ visit: (UnsafeRawBufferPointer) throws(E) -> Bool
    ) throws(E) {
        let capacity = 16
        try withUnsafeTemporaryAllocation(of: iovec.self, capacity: capacity) { vectors throws(E) in
            var position = evbuffer_ptr()
            var done = range.lowerBound
            while done < range.upperBound {
                guard evbuffer_ptr_set(raw, &position, done, EVBUFFER_PTR_SET) == 0 else { return }
                let n = Int(
                    evbuffer_peek(raw, range.upperBound - done, &position, vectors.baseAddress, Int32(capacity)))
                guard n > 0 else { return }
                for i in 0..<min(n, capacity) {
                    let length = min(vectors[i].iov_len, range.upperBound - done)
                    done += length
                    guard try visit(UnsafeRawBufferPointer(start: vectors[i].iov_base, count: length)) else { return }
                    if done == range.upperBound { return }
                }
            }
        }
    }

    /// Shows every byte held, in order and in place, without taking them.
    public func scan(_ visit: (UnsafeRawBufferPointer) -> Void) {
        forEachPiece(in: 0..<count) { piece in
            visit(piece)
            return true
        }
    }

    // MARK: Leaving from the front

    /// Drops the first `count` bytes (all of them if fewer are held).
    func drain(_ count: Int) {
        if count > 0 { evbuffer_drain(raw, count) }
    }

    /// Drops every byte held.
    public func drain() { evbuffer_drain(raw, evbuffer_get_length(raw)) }

    /// Moves the first `count` bytes to the end of `destination` (no copy where whole pieces
    /// go); returns how many moved.
    @discardableResult
    func move(_ count: Int, to destination: ByteQueue) -> Int {
        Int(evbuffer_remove_buffer(raw, destination.raw, count))
    }

    /// Copies the front into `destination` and drops it from the queue; returns how many
    /// bytes that was (at most `destination.count`).
    func remove(into destination: UnsafeMutableRawBufferPointer) -> Int {
        guard destination.count > 0 else { return 0 }
        return max(0, Int(evbuffer_remove(raw, destination.baseAddress, destination.count)))
    }

    /// The first `count` bytes, copied out and dropped.
    func take(_ count: Int) -> [UInt8] {
        let count = min(count, self.count)
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { bytes, initialized in
            initialized = remove(into: UnsafeMutableRawBufferPointer(bytes))
        }
    }

    /// The whole body as a chunk (moving it empties this queue).
    public var chunk: BodyChunk { BodyChunk(queue: self, count: count, keepingAlive: true) }

    /// Takes `chunk`'s bytes (moved, not copied) after those held.
    public func append(_ chunk: BodyChunk) { chunk.move(to: self) }
}
