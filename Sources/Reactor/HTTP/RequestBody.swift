/// How a request body is delimited, as far as the gateway needs to know.
public enum RequestBodyFraming: Sendable, Equatable {
    case none
    case length(UInt64)
    /// Chunked (HTTP/1.1) or a stream of DATA frames (HTTP/2): the length is known at the end.
    case streamed
}

/// Why a request body did not arrive whole.
public enum RequestBodyFailure: Error, Sendable, Equatable {
    /// Past `max_body_size` (or the bound given to `collect`).
    case tooLarge
    /// The client closed the connection or sent bytes that are not a valid body.
    case clientGone
    case malformed
    /// No body byte for the body idle timeout.
    case timeout
}

/// Receives a streamed request body, in order: `requestBody`*, then `requestBodyEnd` or
/// `requestBodyFailed`.
public protocol RequestBodySink: AnyObject {
    /// The chunk's bytes must be moved (or copied) before returning.
    func requestBody(_ chunk: BodyChunk)
    func requestBodyEnd()
    func requestBodyFailed(_ failure: RequestBodyFailure)
}

/// A request's body, read only when and as the gateway asks: nothing is read before the
/// route's authentication has decided on the head (an unauthenticated client pins no
/// memory), and what is forwarded streams with backpressure. Each engine implements it;
/// one of `collect`, `stream` or `discard` is called at most once. Loop-thread only.
public protocol RequestBody: AnyObject {
    var framing: RequestBodyFraming { get }
    /// Reads the whole body into memory, at most `limit` bytes (the gateway's own reads:
    /// form tokens, the logout form, back-channel logout tokens). More → `.failure(.tooLarge)`.
    func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void)
    /// Streams the body to `sink` as it arrives (`max_body_size` still holds).
    func stream(to sink: RequestBodySink)
    /// Flow control while streaming: stop reading the client until `resume`.
    func pause()
    func resume()
    /// The body is not wanted (a refused request): the engine reads and drops a bounded
    /// amount to keep the connection, or closes it after the answer.
    func discard()
}

/// A body already in memory (bytes the gateway collected and may have changed, such as a
/// form with its `access_token` removed), offered as a `RequestBody` again.
public final class BufferedRequestBody: RequestBody {
    private var bytes: [UInt8]?

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var framing: RequestBodyFraming { .length(UInt64(bytes?.count ?? 0)) }

    public func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        let b = bytes ?? []
        bytes = nil
        done(b.count > limit ? .failure(.tooLarge) : .success(b))
    }

    public func stream(to sink: RequestBodySink) {
        let b = bytes ?? []
        bytes = nil
        if !b.isEmpty {
            let buffer = OwnedBuffer(b)
            sink.requestBody(BodyChunk(buffer: buffer.buffer, count: buffer.count))
        }
        sink.requestBodyEnd()
    }

    public func pause() {}
    public func resume() {}
    public func discard() { bytes = nil }
}
