/// The parts of an HTTP message a signature base is built from (RFC 9421 §2): the request's
/// target as the client sent it and its field lines, or a response's status and field lines
/// with the request it answers (for `;req`, §2.4).
public struct SignedMessage: Sendable {
    public struct Field: Sendable {
        /// Lowercase.
        public let name: String
        public let value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public let method: String
    /// Lowercase (`https`).
    public let scheme: String
    /// Host and port as the request gave them; normalized where the base uses them.
    public let authority: String
    /// The target's path as sent, before any rewrite (`/foo`, never empty).
    public let path: String
    /// The target's query without its `?`; nil when the target has none.
    public let query: String?
    public let fields: [Field]
    /// A response's status; nil for a request.
    public let status: Int?
    /// For a response: the request it answers. An array, so that the type can hold itself.
    private let requests: [SignedMessage]

    public var request: SignedMessage? { requests.first }
    public var isResponse: Bool { status != nil }

    public init(method: String, scheme: String, authority: String, path: String, query: String?, fields: [Field]) {
        self.method = method
        self.scheme = scheme.lowercased()
        self.authority = authority
        self.path = path.isEmpty ? "/" : path
        self.query = query
        self.fields = fields
        status = nil
        requests = []
    }

    public init(status: Int, fields: [Field], answering request: SignedMessage?) {
        method = request?.method ?? ""
        scheme = request?.scheme ?? ""
        authority = request?.authority ?? ""
        path = request?.path ?? "/"
        query = request?.query
        self.fields = fields
        self.status = status
        requests = request.map { [$0] } ?? []
    }

    /// A request from its target as sent (`/foo?a=b`, origin-form) and its `Host`/`:authority`.
    public init(method: String, scheme: String, authority: String, target: String, fields: [Field]) {
        let (path, query) = Self.split(target)
        self.init(method: method, scheme: scheme, authority: authority, path: path, query: query, fields: fields)
    }

    static func split(_ target: String) -> (Substring, Substring?) {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (Substring(target), nil) }
        return (target[..<q], target[target.utf8.index(after: q)...])
    }

    init(method: String, scheme: String, authority: String, path: Substring, query: Substring?, fields: [Field]) {
        self.init(
            method: method, scheme: scheme, authority: authority, path: String(path), query: query.map(String.init),
            fields: fields)
    }

    /// Every line of field `name` (lowercase), in order; empty when the message has none.
    public func lines(_ name: String) -> [String] {
        var out: [String] = []
        for f in fields where f.name == name { out.append(f.value) }
        return out
    }
}
