/// The request methods routes and upstream calls know by name (a request with another
/// method reaches the gateway with `HTTPRequestHead.method == nil`).
public enum HTTPMethod: String, Sendable, CaseIterable {
    case GET, POST, HEAD, PUT, DELETE, OPTIONS, PATCH

    /// RFC 9110 §9.2.2: methods a proxy may safely retry.
    public var isIdempotent: Bool { self != .POST && self != .PATCH }
}
