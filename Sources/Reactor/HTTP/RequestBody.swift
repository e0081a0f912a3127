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
    /// Past the body's total deadline (`BodyPace.deadline`).
    case pastDeadline
    /// Under the body's minimum rate after its grace period (`BodyPace.minRate`).
    case tooSlow

    /// The client took too long (RFC 9110 §15.5.9: 408, "the server would like to close
    /// this unused connection").
    public var isTimeout: Bool { self == .timeout || self == .pastDeadline || self == .tooSlow }
}

/// What bounds a request body the gateway streams (`RequestBody.stream(to:limit:)`): its
/// whole length, and, for a gRPC call, each of its messages.
public struct StreamedBodyLimit: Sendable, Equatable {
    /// The most bytes of the whole body; nil: the server's `maxBodySize`.
    public var total: Int?
    /// Each message's bound, read from the body's gRPC framing as it streams; nil: the body
    /// is not read as gRPC messages.
    public var messages: GRPCMessageLimit?

    public init(total: Int? = nil, messages: GRPCMessageLimit? = nil) {
        self.total = total
        self.messages = messages
    }

    /// The server's `maxBodySize` for the whole body, and nothing else.
    public static let server = StreamedBodyLimit()
}

/// Receives a streamed request body, in order: `requestBody`*, then `requestBodyEnd` or
/// `requestBodyFailed`.
public protocol RequestBodySink: AnyObject {
    /// The chunk's bytes must be moved (or copied) before returning.
    func requestBody(_ chunk: BodyChunk)
    /// The body's end, with its trailer section (RFC 9110 §6.5: a chunked body's trailer
    /// fields, or an HTTP/2 stream's trailing HEADERS), as the engine checked it: within the
    /// trailer bounds, no field that frames or routes the message. Usually empty.
    func requestBodyEnd(trailers: HTTP1Fields)
    func requestBodyFailed(_ failure: RequestBodyFailure)
}

/// A request's body, read only when and as the gateway asks: nothing is read before the
/// route's authentication has decided on the head (an unauthenticated client pins no
/// memory), and what is forwarded streams with backpressure. Each engine implements it;
/// one of `collect`, `stream` or `discard` is called at most once. Loop-thread only.
///
/// `Expect: 100-continue` (RFC 9110 §10.1.1): the client holds its body back until it hears
/// `100 Continue` (or gives up waiting). Who says it is the gateway's choice: `sendContinue()`
/// says it now (a proxy relaying its upstream's 100); `collect` and `stream` say it
/// themselves if it has not been said, so a reader never waits on a client that waits on it.
/// A request refused without reading its body never gets a 100.
public protocol RequestBody: AnyObject {
    var framing: RequestBodyFraming { get }
    /// The client asked for `100 Continue` before sending the body and has not had it: an
    /// HTTP/1.1 request with `Expect: 100-continue` and a body (RFC 9110 §10.1.1; an
    /// HTTP/1.0 client's Expect is ignored). False once a 100 or a final answer went out.
    var expectsContinue: Bool { get }
    /// Sends the client `100 Continue` now (RFC 9110 §15.2.1), once; nothing if it did not
    /// ask, already had it, or an answer started.
    func sendContinue()
    /// Reads the whole body into memory, at most `limit` bytes (the gateway's own reads:
    /// form tokens, the logout form, back-channel logout tokens). More → `.failure(.tooLarge)`.
    /// Says `100 Continue` first if the client waits for it.
    func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void)
    /// Streams the body to `sink` as it arrives (`max_body_size` still holds). Says
    /// `100 Continue` first if the client waits for it (and `sendContinue` has not).
    func stream(to sink: RequestBodySink)
    /// The same under `limit` instead of `max_body_size` (a gRPC call's per-message bound).
    /// Past it the sink fails with `.tooLarge`, as past `max_body_size`.
    func stream(to sink: RequestBodySink, limit: StreamedBodyLimit)
    /// Flow control while streaming: stop reading the client until `resume`.
    func pause()
    func resume()
    /// The body is not wanted (a refused request): the engine reads and drops a bounded
    /// amount to keep the connection, or closes it after the answer.
    func discard()
}

extension RequestBody {
    /// A body already read (in memory, or spooled) was bounded as it was read: it streams
    /// as it is.
    public func stream(to sink: RequestBodySink, limit: StreamedBodyLimit) { stream(to: sink) }
}

/// A body already in memory (bytes the gateway collected and may have changed, such as a
/// form with its `access_token` removed), offered as a `RequestBody` again.
public final class BufferedRequestBody: RequestBody {
    private var bytes: [UInt8]?

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes not yet handed on, in place.
    public func scan(_ visit: (UnsafeRawBufferPointer) -> Void) {
        bytes?.withUnsafeBytes { visit($0) }
    }

    public var framing: RequestBodyFraming { .length(UInt64(bytes?.count ?? 0)) }
    /// Already here: nobody waits for a 100.
    public var expectsContinue: Bool { false }
    public func sendContinue() {}

    public func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        let b = bytes ?? []
        bytes = nil
        done(b.count > limit ? .failure(.tooLarge) : .success(b))
    }

    public func stream(to sink: RequestBodySink) {
        let b = bytes ?? []
        bytes = nil
        if !b.isEmpty {
            let buffer = ByteQueue(b)
            sink.requestBody(BodyChunk(queue: buffer, count: buffer.count, keepingAlive: true))
        }
        sink.requestBodyEnd(trailers: HTTP1Fields())
    }

    public func pause() {}
    public func resume() {}
    public func discard() { bytes = nil }
}
