import Glibc

/// One HTTP/2 request's header block, field by field as nghttp2 decodes it, turned into the
/// `HTTPRequestHead` every engine gives the gateway. nghttp2 has already checked what RFC
/// 9113 §8 asks of a receiver (names in lowercase, no connection-specific fields, `TE`
/// only `trailers`, each pseudo-header once, before the regular fields, and the ones a
/// request needs present): a block that fails those never reaches here (its stream is
/// reset). What is left is the gateway's view: the pseudo-headers become the method and
/// target, `:authority` becomes `Host` (RFC 9113 §8.3.1), split `Cookie` fields are joined
/// (RFC 9113 §8.2.3), and the same size bounds as HTTP/1.1 hold.
struct HTTP2RequestHeaders {
    /// Why a block is answered by the engine instead of the gateway.
    enum Refusal: Error, Equatable {
        /// Past the header size or count bound: 431 (RFC 6585 §5).
        case tooLarge
        /// `Host` names another authority than `:authority` (RFC 9113 §8.3.1: "treat …
        /// as malformed"): 400.
        case hostMismatch
        /// No `:authority` and no `Host`: 400, as HTTP/1.1 without Host (RFC 9110 §7.2).
        case missingAuthority
        /// An `Expect` other than `100-continue`: 417 (RFC 9110 §10.1.1), as on HTTP/1.1.
        case unsupportedExpectation

        var status: Int {
            switch self {
            case .tooLarge: 431
            case .unsupportedExpectation: 417
            case .hostMismatch, .missingAuthority: 400
            }
        }

        var description: String {
            switch self {
            case .tooLarge: "request header fields too large"
            case .hostMismatch: "invalid Host header"
            case .missingAuthority: "missing :authority"
            case .unsupportedExpectation: "expectation not supported"
            }
        }
    }

    private var method: String?
    private var path: String?
    private var authority: String?
    private var fields = HTTP1Fields()
    private var cookies: [UInt8] = []
    private var bytes = 0
    private var count = 0
    private(set) var refusal: Refusal?
    let limits: HTTP1Limits

    init(limits: HTTP1Limits) { self.limits = limits }

    /// One decoded field (name and value as nghttp2 gives them).
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        // Counted as HTTP/1.1 counts a field line: name, ": ", value, CRLF; also past a
        // refusal (`isBomb`).
        bytes += name.count + value.count + 4
        count += 1
        guard refusal == nil else { return }
        guard bytes <= limits.maxHeaderBytes, count <= limits.maxHeaderCount else {
            refusal = .tooLarge
            return
        }
        guard name.first == UInt8(ascii: ":") else {
            if Self.equals(name, "cookie") {
                if !cookies.isEmpty { cookies += "; ".utf8 }
                cookies += value
            } else {
                fields.append(name: name, value: value)
            }
            return
        }
        let text = String(decoding: value, as: UTF8.self)
        if Self.equals(name, ":method") {
            method = text
        } else if Self.equals(name, ":path") {
            path = text
        } else if Self.equals(name, ":authority") {
            authority = text
        }
        // :scheme is the client's business: the gateway knows whether the connection is TLS.
    }

    /// The gRPC call the block announced (its `content-type`, if read before a refusal):
    /// asked only when the engine refuses the block.
    var grpcCall: GRPCCall? { GRPCCall(fields) }

    /// A refused block that decodes on to more than twice the bounds: an HPACK bomb (a few
    /// bytes on the wire naming a large table entry again and again), not a client with too
    /// many cookies. Its stream is reset rather than read to its end for a 431.
    var isBomb: Bool {
        refusal == .tooLarge && (bytes > 2 * limits.maxHeaderBytes || count > 2 * limits.maxHeaderCount)
    }

    /// The head the gateway decides on, or the refusal.
    func head() -> Result<HTTPRequestHead, Refusal> {
        if let refusal { return .failure(refusal) }
        var fields = self.fields
        if !cookies.isEmpty {
            Array("cookie".utf8).withUnsafeBufferPointer { n in
                cookies.withUnsafeBufferPointer { v in fields.append(name: n, value: v) }
            }
        }
        let hosts = fields.values("host")
        if let authority {
            if hosts.contains(where: { $0.lowercased() != authority.lowercased() }) { return .failure(.hostMismatch) }
            if hosts.isEmpty { fields.append("host", authority) }
        } else if hosts.isEmpty {
            return .failure(.missingAuthority)
        }
        if fields.values("expect").contains(where: { $0.lowercased() != "100-continue" }) {
            return .failure(.unsupportedExpectation)
        }
        let methodName = method ?? ""
        // CONNECT (RFC 9113 §8.5) has no :path; its target is the authority.
        let target = path ?? authority ?? ""
        var head = HTTPRequestHead(methodName: methodName, target: target, version: (2, 0), fields: fields)
        // Connection-specific fields cannot be in an HTTP/2 request (RFC 9113 §8.2.2).
        head.listsConnectionOptions = false
        return .success(head)
    }

    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        bytes.count == literal.utf8CodeUnitCount
            && memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }
}
