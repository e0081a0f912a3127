/// What an `UpstreamCall` sends: the request line, the fields and the body, and how the
/// body waits for the upstream (`Expect: 100-continue`).
extension UpstreamCall {
    public struct Request {
        public var method: HTTPMethod
        public var target: String
        /// The request's fields (Content-Length is set by the call itself).
        public var fields: HTTP1Fields
        /// A proxied request: the client's fields passed on, sent before `fields` (framing
        /// fields and Expect aside, as there).
        public var forwarded: HTTP1ForwardedFields?
        /// The body to send, if any: read from it only when the call starts.
        public var body: RequestBody?
        /// The request carries `Connection: upgrade` and `Upgrade` (its fields say which): a
        /// `101` hands the connection over (`upstreamSwitchedProtocols`). Without it a 101
        /// is a protocol error (RFC 9110 §15.2.2: a server sends 101 only to an Upgrade).
        public var upgrade: Bool
        /// Ask the upstream before sending the body (RFC 9110 §10.1.1): the head carries
        /// `Expect: 100-continue`, and the body follows the upstream's 100, or this many
        /// seconds without an answer. nil: the body goes with the head.
        public var continueTimeout: Double?
        /// The longest the whole exchange may take, in seconds (a gRPC call's
        /// `grpc-timeout`): past it the call fails with `responseTimeout`. nil: only the
        /// endpoint's idle timeouts bound it.
        public var deadline: Double?
        /// The longest silence allowed between two bytes of the answer, in place of the
        /// endpoint's `responseTimeout` (a stream the gateway ends itself: an MCP
        /// `subscriptions/listen`). nil: the endpoint's.
        public var idleTimeout: Double?
        /// Which fields of the client's trailer section go on (after the body, on a chunked
        /// or HTTP/2 request; a body sent by length carries none). nil: none do.
        public var trailerPolicy: RequestTrailerPolicy?
        /// What bounds the body as it streams from the client (a gRPC call's messages).
        public var bodyLimit: StreamedBodyLimit
    }
}

extension UpstreamCall.Request {
    // Outside the struct so that it hands everything to the memberwise init: one that set
    // the properties one by one made the optimizer build the request twice and copy it (a
    // retain and a release of every reference in it, per request).
    public init(
        method: HTTPMethod, target: String, fields: HTTP1Fields, forwarded: HTTP1ForwardedFields? = nil,
        body: RequestBody?, trailerPolicy: RequestTrailerPolicy? = nil
    ) {
        self.init(
            method: method, target: target, fields: fields, forwarded: forwarded, body: body, upgrade: false,
            continueTimeout: nil, deadline: nil, idleTimeout: nil, trailerPolicy: trailerPolicy, bodyLimit: .server)
    }
}

/// Decides which of a client's request trailer fields an upstream gets: the gateway's header
/// rules, for fields that arrive after the head was judged.
public protocol RequestTrailerPolicy: AnyObject {
    /// `name` as the client sent it (any case).
    func forwardsTrailer(_ name: Span<UInt8>) -> Bool
}
