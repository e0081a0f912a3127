internal import CEvent

/// The request methods the server accepts; evhttp answers any other with 405/501 itself.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case GET, POST, HEAD, PUT, DELETE, OPTIONS, PATCH

    init?(_ cmd: evhttp_cmd_type) {
        switch cmd {
        case EVHTTP_REQ_GET: self = .GET
        case EVHTTP_REQ_POST: self = .POST
        case EVHTTP_REQ_HEAD: self = .HEAD
        case EVHTTP_REQ_PUT: self = .PUT
        case EVHTTP_REQ_DELETE: self = .DELETE
        case EVHTTP_REQ_OPTIONS: self = .OPTIONS
        case EVHTTP_REQ_PATCH: self = .PATCH
        default: return nil
        }
    }

    var cmd: evhttp_cmd_type {
        switch self {
        case .GET: EVHTTP_REQ_GET
        case .POST: EVHTTP_REQ_POST
        case .HEAD: EVHTTP_REQ_HEAD
        case .PUT: EVHTTP_REQ_PUT
        case .DELETE: EVHTTP_REQ_DELETE
        case .OPTIONS: EVHTTP_REQ_OPTIONS
        case .PATCH: EVHTTP_REQ_PATCH
        }
    }

    /// RFC 9110 §9.2.2: methods a proxy may safely retry.
    public var isIdempotent: Bool { self != .POST && self != .PATCH }

    static var allowedMask: UInt16 {
        UInt16(allCases.reduce(0) { $0 | $1.cmd.rawValue })
    }
}
