internal import CEvent
import Glibc

/// A run of body bytes at the front of a libevent buffer (not owning): the first `count`
/// bytes of `buffer`. Moving them into another buffer is zero-copy; the receiver moves
/// exactly `count` bytes out during the call that hands it the chunk.
public struct BodyChunk {
    let buffer: OpaquePointer
    public let count: Int
    /// Keeps an owned buffer alive as long as a chunk of it is (`OwnedBuffer(x).chunk` must
    /// not free the bytes before they are moved).
    private let owner: AnyObject?

    init(buffer: OpaquePointer, count: Int, owner: AnyObject? = nil) {
        self.buffer = buffer
        self.count = count
        self.owner = owner
    }

    /// The whole of `buffer`.
    init(buffer: OpaquePointer, owner: AnyObject? = nil) {
        self.init(buffer: buffer, count: evbuffer_get_length(buffer), owner: owner)
    }

    /// Moves the chunk's bytes to the end of `destination` (zero-copy where libevent can).
    func move(to destination: OpaquePointer) {
        _ = evbuffer_remove_buffer(buffer, destination, count)
    }

    /// Copies the chunk's bytes out, consuming them (for sinks that keep bytes themselves).
    public func take() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        if count > 0 { _ = out.withUnsafeMutableBytes { evbuffer_remove(buffer, $0.baseAddress, count) } }
        return out
    }
}

extension GRPCMessageCounter {
    /// Reads the chunk's bytes without moving them, segment by segment as its buffer holds
    /// them (no copy, whatever the chunk's size).
    mutating func feed(_ chunk: BodyChunk) -> Verdict {
        var done = 0
        let capacity = 16
        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: capacity) { vectors in
            var position = evbuffer_ptr()
            while done < chunk.count {
                guard evbuffer_ptr_set(chunk.buffer, &position, done, EVBUFFER_PTR_SET) == 0 else { return .within }
                let n = Int(
                    evbuffer_peek(chunk.buffer, chunk.count - done, &position, vectors.baseAddress, Int32(capacity)))
                guard n > 0 else { return .within }
                for i in 0..<min(n, capacity) where done < chunk.count {
                    let length = min(vectors[i].iov_len, chunk.count - done)
                    guard let base = vectors[i].iov_base?.assumingMemoryBound(to: UInt8.self) else { return .within }
                    done += length
                    let verdict = feed(Span(_unsafeElements: UnsafeBufferPointer(start: base, count: length)))
                    if verdict == .tooLarge { return verdict }
                }
            }
            return .within
        }
    }
}

/// An owned, growable byte buffer for bodies that the gateway writes itself (error pages,
/// metrics) or keeps (a collected body). Owns its evbuffer.
public final class OwnedBuffer {
    let buffer: OpaquePointer
    public init() { buffer = evbuffer_new() }
    public convenience init(_ text: String) {
        self.init()
        append(text)
    }
    public convenience init(_ bytes: [UInt8]) {
        self.init()
        if !bytes.isEmpty { _ = bytes.withUnsafeBytes { evbuffer_add(buffer, $0.baseAddress, bytes.count) } }
    }
    public func append(_ text: String) {
        var text = text
        text.withUTF8 { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
    }
    public var count: Int { evbuffer_get_length(buffer) }
    /// Drops every byte held.
    public func drain() { evbuffer_drain(buffer, count) }
    /// The whole buffer as a chunk (moving it empties this buffer).
    public var chunk: BodyChunk { BodyChunk(buffer: buffer, owner: self) }
    /// Takes `chunk`'s bytes (moved, not copied) after those held.
    public func append(_ chunk: BodyChunk) { chunk.move(to: buffer) }
    /// Shows every byte held, in order and in place, without taking them.
    public func scan(_ visit: (UnsafeRawBufferPointer) -> Void) {
        let extents = Int(evbuffer_peek(buffer, -1, nil, nil, 0))
        guard extents > 0 else { return }
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: extents) { vectors in
            let n = Int(evbuffer_peek(buffer, -1, nil, vectors.baseAddress, Int32(extents)))
            for v in vectors.prefix(n) { visit(UnsafeRawBufferPointer(start: v.iov_base, count: v.iov_len)) }
        }
    }
    deinit { evbuffer_free(buffer) }
}
