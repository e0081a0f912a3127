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
    let received = OwnedBuffer()
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
    let output = OwnedBuffer()
    /// The data provider said DEFERRED: nghttp2 waits for `resume_data`.
    var deferred = false
    /// The client's body was paused past the high-water mark and waits to be resumed once
    /// the provider has taken enough.
    var bodyPaused = false
    /// The provider handed nghttp2 the body's end (or there was no body).
    var requestEnded = false

    /// Monotonic seconds of the last response byte (the response deadline runs from it).
    var lastActivity = 0.0
    var timer: LoopTimer?

    init(connection: UpstreamH2Connection) { self.connection = connection }

    /// The stream is submitted and has not closed.
    var isOpen: Bool { id > 0 && closeCode == nil }
}
