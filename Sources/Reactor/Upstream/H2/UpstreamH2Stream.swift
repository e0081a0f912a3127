/// One request's stream on an HTTP/2 upstream connection (RFC 9113 §5): what nghttp2's
/// callbacks recorded of the response and has not reached the call's delegate yet, and the
/// request body bytes waiting for the data provider. Held by its `UpstreamCall`; the
/// connection maps the stream id to the call while the stream is open. Loop-thread only.
final class UpstreamH2Stream {
    let connection: UpstreamH2Connection
    /// nghttp2's id once the request is submitted; -1 before.
    var id: Int32 = -1

    // The response, as recorded.
    /// The header block being decoded: the head's fields, then a trailer section's.
    var fields = HTTP1Fields()
    var fieldBytes = 0
    var status = 0
    /// Interim (1xx) heads not yet told.
    var interims: [HTTPResponseHead] = []
    /// The final head, recorded and not yet told.
    var head: HTTPResponseHead?
    /// The final head came (told or not): a later header block is the trailer section.
    var headSeen = false
    /// Body bytes received and not yet taken by the delegate: not yet credited to the
    /// upstream's window, so the window bounds them.
    let received = ByteQueue()
    var trailers: HTTP1Fields?
    /// The upstream's END_STREAM came.
    var ended = false
    /// The stream closed, with this error code (0: cleanly).
    var closeCode: UInt32?
    /// A header block broke a rule (a bad or missing `:status`, past the size bound).
    var malformed = false
    /// The stream has news for the delegate (queued on the connection's `touched`).
    var touched = false

    // The request body.
    /// Bytes queued for DATA frames.
    let output = ByteQueue()
    /// The data provider said DEFERRED: nghttp2 waits for `resume_data`.
    var deferred = false
    /// The provider handed nghttp2 the body's end (or there was no body).
    var requestEnded = false
    /// What the provider has handed nghttp2 of a small body, kept so that the request can
    /// go again when the upstream refuses the stream unprocessed (REFUSED_STREAM, RFC 9113
    /// §8.7: a server at its stream limit does). Made on the first DATA; dropped, and
    /// `replayable` false, once the body is past `replayLimit`.
    private var sent: ByteQueue?
    private var replayable = true
    static let replayLimit = 64 << 10

    /// Monotonic seconds of the last response byte (the response deadline runs from it).
    var lastActivity = 0.0
    var timer: LoopTimer?

    init(connection: UpstreamH2Connection) { self.connection = connection }

    /// The stream is submitted and has not closed.
    var isOpen: Bool { id > 0 && closeCode == nil }

    /// Keeps what went into DATA frames while the body is small enough to send again.
    func keepForReplay(_ bytes: UnsafeRawBufferPointer) {
        guard replayable else { return }
        let kept = sent ?? ByteQueue()
        if kept.count + bytes.count > Self.replayLimit {
            sent = nil
            replayable = false
        } else {
            kept.append(bytes)
            sent = kept
        }
    }

    /// The whole body again, for a new stream: what was sent, then what was not yet. nil
    /// when it was not kept.
    func takeReplay() -> ByteQueue? {
        guard replayable else { return nil }
        let whole = sent ?? ByteQueue()
        whole.append(allOf: output)
        sent = nil
        replayable = false
        return whole
    }
}
