/// Why an upstream exchange failed, as the gateway maps it to 502/504.
public enum UpstreamFailure: Sendable, Equatable {
    case connectTimeout, responseTimeout, connectionFailed, invalidResponse, cancelled
    /// The client's request body did not arrive whole (too large, client gone, malformed,
    /// timed out) while it was being forwarded: the upstream exchange was aborted and its
    /// connection closed. The gateway answers it itself (413 for `.tooLarge` if nothing
    /// was sent to the client yet).
    case clientBodyFailed(RequestBodyFailure)
    /// The TLS handshake with an HTTPS upstream failed; `reason` (the certificate verify
    /// error, such as "certificate has expired", or OpenSSL's) is for the log only.
    case tlsHandshakeFailed(reason: String)

    public var isTimeout: Bool { self == .connectTimeout || self == .responseTimeout }

    /// A fixed name per kind, for metric labels (no reason text).
    public var kind: String {
        switch self {
        case .connectTimeout: "connectTimeout"
        case .responseTimeout: "responseTimeout"
        case .connectionFailed: "connectionFailed"
        case .invalidResponse: "invalidResponse"
        case .cancelled: "cancelled"
        case .clientBodyFailed(let why): "clientBodyFailed(\(why))"
        case .tlsHandshakeFailed: "tlsHandshakeFailed"
        }
    }
}

/// Receives the events of one upstream exchange, in order: `interim`*, `head`, `body`*,
/// then exactly one of `complete` or `failed`. None comes from inside `UpstreamCall.start()`
/// or after `cancel()`.
public protocol UpstreamCallDelegate: AnyObject {
    func upstreamHead(_ head: HTTPResponseHead)
    /// An interim response (1xx other than 100 and 101), before the head.
    func upstreamInterim(_ head: HTTPResponseHead)
    func upstreamBody(_ chunk: BodyChunk)
    func upstreamComplete()
    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool)
    /// A `101` to a request that asked to upgrade (`Request.upgrade`): the connection now
    /// belongs to the delegate as a tunnel side (what the upstream sent after the head is in
    /// its input). Ends the call: nothing else follows.
    func upstreamSwitchedProtocols(_ head: HTTPResponseHead, _ upstream: TunnelEndpoint)
    /// The request waited on the upstream's `100 Continue` (`Request.continueTimeout`), and
    /// the upstream said it, or stayed silent for that long: the body is sent from now on
    /// (read from the client right after this returns). Before the head; at most once.
    func upstreamContinue()
    /// The response's trailer section (RFC 9110 §6.5), from an HTTP/2 upstream: after the
    /// last body chunk, right before `upstreamComplete`.
    func upstreamTrailers(_ fields: HTTP1Fields)
}

extension UpstreamCallDelegate {
    /// A delegate that never asks to upgrade gets no 101 (the call answers it with
    /// `invalidResponse`); this closes a side given anyway.
    public func upstreamSwitchedProtocols(_ head: HTTPResponseHead, _ upstream: TunnelEndpoint) { upstream.close() }

    /// The body's own `stream` says `100 Continue` to a client that still waits for it.
    public func upstreamContinue() {}

    /// Trailers are dropped unless the delegate passes them on.
    public func upstreamTrailers(_ fields: HTTP1Fields) {}
}
