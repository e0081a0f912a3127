/// What a `Check` call asks about (Envoy's `AttributeContext`, ext_authz v3): the HTTP
/// request the proxy holds, as the gateway judges it. Only what was read and checked by
/// `CheckRequestReader`.
public struct CheckAttributes: Sendable, Equatable {
    /// One request field as the proxy sent it: the name lower-cased (Envoy lower-cases them;
    /// any other case is refused), the value as sent.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public var method: String
    /// `http` or `https`, as the proxy received the request.
    public var scheme: String
    /// The `Host` or `:authority` the client sent.
    public var host: String
    /// The request target as the proxy received it: the path and its query, not decoded
    /// (the gateway normalizes it as it does every request's).
    public var path: String
    /// The request's fields, in the order the proxy gave them.
    public var fields: [Field]
    /// The client's address as the proxy saw it (`attributes.source.address`), if given.
    public var sourceAddress: String?
    /// The proxy's request id (`attributes.request.http.id`), if given.
    public var requestID: String?
    /// The request's body, when the proxy sent one (`with_request_body`: `raw_body`, else
    /// `body`); nil when it sent none, an empty one, or one past `Limits.maxBodyBytes`.
    public var body: [UInt8]?
    /// The body came as text (`body`, not `raw_body`): Envoy replaces each byte that is not
    /// UTF-8 there, so it may not be the bytes the server gets.
    public var bodyIsText = false
    /// The body is shorter than the request's `size`: the proxy cut it.
    public var bodyCut = false
    /// The proxy sent a body past `Limits.maxBodyBytes`, which was not kept: a route that
    /// judges bodies refuses the request (413); the others never read one.
    public var bodyPastLimit = false

    public init(
        method: String, scheme: String, host: String, path: String, fields: [Field], sourceAddress: String? = nil,
        requestID: String? = nil, body: [UInt8]? = nil
    ) {
        self.body = body
        self.method = method
        self.scheme = scheme
        self.host = host
        self.path = path
        self.fields = fields
        self.sourceAddress = sourceAddress
        self.requestID = requestID
    }

    /// The first value of `name` (lower-case), if any.
    public func first(_ name: String) -> String? { fields.first { $0.name == name }?.value }
}
