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

    public init(methodName: String, target: String, version: (major: Int, minor: Int), fields: HTTP1Fields) {
        self.method = HTTPMethod(rawValue: methodName)
        self.methodName = methodName
        self.target = target
        self.version = version
        self.fields = fields
    }
}

/// A response head going to a client (or coming from an upstream).
public struct HTTPResponseHead: Sendable {
    public var status: Int
    /// The reason phrase; nil: the standard one for `status`.
    public var reason: String?
    public var fields: HTTP1Fields

    public init(status: Int, reason: String? = nil, fields: HTTP1Fields = HTTP1Fields()) {
        self.status = status
        self.reason = reason
        self.fields = fields
    }
}
