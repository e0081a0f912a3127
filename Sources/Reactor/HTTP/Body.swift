/// A run of body bytes at the front of a queue (not owning): the first `count` bytes of
/// `queue`. Moving them into another queue is zero-copy; the receiver moves exactly `count`
/// bytes out during the call that hands it the chunk.
public struct BodyChunk {
    /// Unowned: a chunk lives only during the call that hands it over, while the
    /// connection, stream or body that holds the queue does (`keepingAlive` covers the one
    /// case where it might not).
    unowned(unsafe) let queue: ByteQueue
    public let count: Int
    /// Keeps an owned queue alive as long as a chunk of it is (`ByteQueue(x).chunk` must
    /// not free the bytes before they are moved).
    private let owner: ByteQueue?

    init(queue: ByteQueue, count: Int, keepingAlive: Bool = false) {
        self.queue = queue
        self.count = count
        owner = keepingAlive ? queue : nil
    }

    /// The whole of `queue`.
    init(queue: ByteQueue) {
        self.init(queue: queue, count: queue.count)
    }

    /// Moves the chunk's bytes to the end of `destination` (zero-copy where libevent can).
    func move(to destination: ByteQueue) {
        queue.move(count, to: destination)
    }

    /// Drops the chunk's bytes unread.
    func drop() { queue.drain(count) }

    /// Copies the chunk's bytes out, consuming them (for sinks that keep bytes themselves).
    public func take() -> [UInt8] { queue.take(count) }
}

extension GRPCMessageCounter {
    /// Reads the chunk's bytes without moving them, segment by segment as its buffer holds
    /// them (no copy, whatever the chunk's size).
    mutating func feed(_ chunk: BodyChunk) -> Verdict {
        var verdict = Verdict.within
        chunk.queue.forEachPiece(in: 0..<chunk.count) { piece in
            verdict = feed(Span(_unsafeElements: piece.assumingMemoryBound(to: UInt8.self)))
            return verdict != .tooLarge
        }
        return verdict
    }
}
