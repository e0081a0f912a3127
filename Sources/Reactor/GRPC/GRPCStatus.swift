/// gRPC status codes (grpc/grpc `doc/statuscodes.md`), and the one a refusal the gateway
/// makes itself is told as.
public enum GRPCStatus: Int, Sendable {
    case ok = 0
    case cancelled = 1
    case unknown = 2
    case invalidArgument = 3
    case deadlineExceeded = 4
    case notFound = 5
    case alreadyExists = 6
    case permissionDenied = 7
    case resourceExhausted = 8
    case failedPrecondition = 9
    case aborted = 10
    case outOfRange = 11
    case unimplemented = 12
    case `internal` = 13
    case unavailable = 14
    case dataLoss = 15
    case unauthenticated = 16

    /// The code for an HTTP status the gateway would have answered. It follows gRPC's own
    /// HTTP-to-gRPC table (`doc/http-grpc-status-mapping.md`: 400 INTERNAL, 401
    /// UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429/502/503 UNAVAILABLE,
    /// anything else UNKNOWN), so a client sees the same code whether the refusal came from
    /// the gateway or from a plain HTTP hop, with three refinements where the gateway knows
    /// more than a status line says, as Envoy's local replies do:
    /// - 504: the gateway's own upstream timeout ran out: DEADLINE_EXCEEDED;
    /// - 413, 431: a body or metadata past the gateway's limits: RESOURCE_EXHAUSTED, the
    ///   code gRPC itself gives a message or metadata over its size limits;
    /// - 429: the caller's rate limit: RESOURCE_EXHAUSTED, gRPC's code for a quota spent
    ///   (UNAVAILABLE would tell a client to retry at once).
    /// 400 stays INTERNAL, not INVALID_ARGUMENT: the gateway's 400s are about the HTTP
    /// request (its target, Host, credentials' syntax), never about the call's message,
    /// which it does not read, and INVALID_ARGUMENT tells a client its arguments are wrong.
    public init(refusal status: Int) {
        switch status {
        case 400: self = .internal
        case 401: self = .unauthenticated
        case 403: self = .permissionDenied
        case 404: self = .unimplemented
        case 413, 429, 431: self = .resourceExhausted
        case 502, 503: self = .unavailable
        case 504: self = .deadlineExceeded
        default: self = .unknown
        }
    }
}
