/// A request head as the gateway sees it, whatever protocol carried it (HTTP/1.1 today,
/// HTTP/2 later: the same value from a HEADERS frame). Framing, keep-alive and
/// `Expect` are the engine's business and are not here; what the gateway decides on is.
public struct HTTPRequestHead: Sendable {
    /// nil for a method the gateway does not serve (answered 405).
    public var method: HTTPMethod?
    /// The method token as received.
    public var methodName: String
    /// The request-target exactly as received (RFC 9112 §3.2), not decoded.
    public var target: String
    /// (major, minor): (1, 0), (1, 1); (2, 0) for HTTP/2.
    public var version: (major: Int, minor: Int)
    public var fields: HTTP1Fields
    /// Whether a Connection field may name options other than close, keep-alive and
    /// upgrade (fields that are hop-by-hop for this request); false only when the engine
    /// checked that it does not.
    public var listsConnectionOptions: Bool
}

extension HTTPRequestHead {
    // Outside the struct so that it hands everything to the memberwise init (see
    // HTTPResponseHead's).
    public init(methodName: String, target: String, version: (major: Int, minor: Int), fields: HTTP1Fields) {
        self.init(
            method: HTTPMethod(rawValue: methodName), methodName: methodName, target: target, version: version,
            fields: fields, listsConnectionOptions: true)
    }
}

/// A response head going to a client (or coming from an upstream).
public struct HTTPResponseHead: Sendable {
    public var status: Int
    /// The reason phrase; nil: the standard one for `status`.
    public var reason: String?
    public var fields: HTTP1Fields
    /// A proxied response: the upstream's fields passed on, sent before `fields`.
    public var forwarded: HTTP1ForwardedFields?
    /// The body's length when it is known from how it arrives (an upstream's response with
    /// Content-Length): what the client is told, without looking for the field again.
    public var bodyLength: UInt64?
    /// Whether a Connection field may name options other than close, keep-alive and
    /// upgrade; false only when the parser checked that it does not.
    public var listsConnectionOptions: Bool
    /// One more field, sent after `fields` and kept without a field section: a proxied
    /// response's own fields are most often just its request id, and a section for that
    /// one cost an allocation and a copy per response. The value must be a valid field
    /// value (RFC 9110 §5.5); the name is a literal.
    public var lastField: (name: StaticString, value: String)?
    /// A gRPC trailers-only answer (`GRPCTrailersOnly`): no body, and on HTTP/2 no
    /// `content-length` either, so the head is the whole response as gRPC writes one. An
    /// HTTP/1.1 answer still says `Content-Length: 0`: its framing needs it.
    public var trailersOnly: Bool

    /// The head with the fields it passes on merged into `fields`, in the order they are
    /// sent (for a transport that keeps what it was given: tests, logs).
    public var flattened: HTTPResponseHead {
        guard forwarded != nil || lastField != nil else { return self }
        var all = forwarded?.passedOn ?? HTTP1Fields()
        fields.forEachFieldBuffer { all.append(name: $0, value: $1) }
        if let (name, value) = lastField { all.append(name, value) }
        var flat = HTTPResponseHead(status: status, reason: reason, fields: all)
        flat.trailersOnly = trailersOnly
        return flat
    }
}

extension HTTPResponseHead {
    // Declared here, outside the struct, so that it can hand everything to the memberwise
    // init: an init that set the stored properties one by one made the optimizer build the
    // head twice and copy it (a retain and a release of every reference in it, each time a
    // head was made).
    public init(
        status: Int, reason: String? = nil, fields: HTTP1Fields = HTTP1Fields(), forwarded: HTTP1ForwardedFields? = nil,
        lastField: (name: StaticString, value: String)? = nil, bodyLength: UInt64? = nil,
        listsConnectionOptions: Bool = true
    ) {
        self.init(
            status: status, reason: reason, fields: fields, forwarded: forwarded, bodyLength: bodyLength,
            listsConnectionOptions: listsConnectionOptions, lastField: lastField, trailersOnly: false)
    }
}
