import SwiftProtobuf

/// Reads a `CheckRequest` (ext_authz v3) from a gRPC message's bytes. Everything the gateway
/// later parses again as HTTP is checked here first, so that a request Envoy (or whoever
/// calls) could not have received from a client is refused as INVALID_ARGUMENT rather than
/// judged: a method that is not a token, a scheme other than http(s), an empty host or
/// path, a field name that is not a lower-case token, a value with a control character
/// (CR, LF or NUL would split a header line where the gateway writes one), a raw value that
/// is not UTF-8, a source address that is not an IP address, a `host` field that names
/// another host, both `transfer-encoding` and `content-length` (RFC 9112 §6.3), or more
/// fields or bytes than the gateway's header limits. Fields that frame or route a message on
/// one connection (`content-length`, `transfer-encoding`, `te`, `connection`, `upgrade`…)
/// say nothing about the request being judged and are dropped.
public enum CheckRequestReader {
    /// Why a message was refused. `httpStatus` nil: the message itself is not a CheckRequest
    /// (the call is refused, INVALID_ARGUMENT); else the message is one, and the request it
    /// describes is what is refused, with the status a proxied request would get (400, or
    /// 431 for too many or too large fields): a verdict, never the service failing, since a
    /// client picks its own request's fields.
    public struct Refusal: Error, Sendable, Equatable {
        public let reason: String
        public let httpStatus: Int?
        init(_ reason: String, status: Int? = 400) {
            self.reason = reason
            self.httpStatus = status
        }
    }

    /// The gateway's header bounds, applied to the request's fields as to a client's.
    public struct Limits: Sendable {
        public var maxFields: Int
        /// Host, path and fields together, counted as HTTP/1.1 field lines.
        public var maxFieldBytes: Int
        /// The request's body, when the proxy sends it (`with_request_body`); 0: none is
        /// taken (a body then makes the message too large).
        public var maxBodyBytes: Int
        /// The whole message, before it is decoded: what the proxy adds besides the request
        /// (metadata, certificates) is bounded too.
        public var maxMessageBytes: Int

        public init(maxFields: Int, maxFieldBytes: Int, maxBodyBytes: Int = 0, maxMessageBytes: Int? = nil) {
            self.maxFields = maxFields
            self.maxFieldBytes = maxFieldBytes
            self.maxBodyBytes = maxBodyBytes
            self.maxMessageBytes = maxMessageBytes ?? (4 * maxFieldBytes + 16384 + maxBodyBytes)
        }
    }

    /// Unknown fields (the parts of Envoy's messages proto/ leaves out: metadata, TLS
    /// session, labels…) are dropped as they are read, never kept.
    static let options: BinaryDecodingOptions = {
        var o = BinaryDecodingOptions()
        o.discardUnknownFields = true
        o.messageDepthLimit = 16
        return o
    }()

    public static func read(_ bytes: [UInt8], limits: Limits) -> Result<CheckAttributes, Refusal> {
        guard bytes.count <= limits.maxMessageBytes else {
            return .failure(Refusal("the message is too large", status: 431))
        }
        let message: Envoy_Service_Auth_V3_CheckRequest
        do {
            message = try Envoy_Service_Auth_V3_CheckRequest(serializedBytes: bytes, options: options)
        } catch {
            return .failure(Refusal("the message is not a CheckRequest", status: nil))
        }
        guard message.hasAttributes, message.attributes.hasRequest, message.attributes.request.hasHTTP else {
            return .failure(Refusal("the CheckRequest has no HTTP request attributes", status: nil))
        }
        let http = message.attributes.request.http
        guard Self.isToken(http.method) else { return .failure(Refusal("the method is not a token")) }
        guard http.scheme == "http" || http.scheme == "https" else {
            return .failure(Refusal("the scheme is not http or https"))
        }
        guard !http.host.isEmpty, Self.isFieldValue(http.host) else {
            return .failure(Refusal("the host is empty or has a control character"))
        }
        guard !http.path.isEmpty, Self.isFieldValue(http.path, target: true) else {
            return .failure(Refusal("the path is empty or has a space or control character"))
        }
        let fields: [CheckAttributes.Field]
        switch Self.fields(http, limits: limits) {
        case .success(let f): fields = f
        case .failure(let refusal): return .failure(refusal)
        }
        var source: String?
        let peer = message.attributes.source
        if peer.hasAddress, case .socketAddress(let socket)? = peer.address.address, !socket.address.isEmpty {
            guard Self.isIPAddress(socket.address) else {
                return .failure(Refusal("the source address is not an IP address"))
            }
            source = socket.address
        }
        guard http.id.utf8.count <= 200, Self.isFieldValue(http.id) else {
            return .failure(Refusal("the request id is too long or has a control character"))
        }
        // `pack_as_bytes` sends the body as it came (`raw_body`); otherwise as text (`body`).
        // Both at once would be two bodies to choose from: the call is refused.
        guard http.rawBody.isEmpty || http.body.isEmpty else {
            return .failure(Refusal("the CheckRequest carries both body and raw_body", status: nil))
        }
        let text = http.rawBody.isEmpty
        let length = text ? http.body.count : http.rawBody.count
        let kept = length > 0 && length <= limits.maxBodyBytes
        var attributes = CheckAttributes(
            method: http.method, scheme: http.scheme, host: http.host, path: http.path, fields: fields,
            sourceAddress: source, requestID: http.id.isEmpty ? nil : http.id,
            body: !kept ? nil : [UInt8](text ? http.body : http.rawBody))
        attributes.bodyIsText = kept && text
        attributes.bodyPastLimit = length > limits.maxBodyBytes
        // `size` is the whole request's (-1: unknown); a body that came shorter was cut.
        attributes.bodyCut = kept && http.size > 0 && http.size != Int64(length)
        return .success(attributes)
    }

    /// `header_map` when the proxy sends raw headers (`encode_raw_headers`: repeated names
    /// kept apart, a value in `raw_value`), else the `headers` map (repeated names already
    /// joined). The map's order is not the wire's: it is sorted, so that a request gives
    /// the same fields however the map was encoded (it is read as its entries, in
    /// proto/, so that no dictionary is built per call).
    private static func fields(
        _ http: Envoy_Service_Auth_V3_AttributeContext.HttpRequest, limits: Limits
    ) -> Result<[CheckAttributes.Field], Refusal> {
        var out: [CheckAttributes.Field] = []
        let count = http.hasHeaderMap ? http.headerMap.headers.count : http.headers.count
        guard count <= limits.maxFields else {
            return .failure(Refusal("more header fields than allowed", status: 431))
        }
        if http.hasHeaderMap {
            for h in http.headerMap.headers {
                var value = h.value
                if !h.rawValue.isEmpty {
                    // The bytes the proxy forwards; a value judged as anything else is not them.
                    guard h.value.isEmpty, let raw = String(validating: h.rawValue, as: UTF8.self) else {
                        return .failure(Refusal("a raw header value is not UTF-8, or comes with a value"))
                    }
                    value = raw
                }
                out.append(CheckAttributes.Field(h.key, value))
            }
        } else {
            // By bytes: the names are ASCII tokens (checked below), where String's Unicode
            // ordering would only cost more.
            out = http.headers.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { CheckAttributes.Field($0.key, $0.value) }
            // A map holds each key once (Envoy joins a repeated field's values): a key twice
            // would be read by one side as its first value and by another as its last.
            for i in out.indices.dropFirst() where out[i].name == out[i - 1].name {
                return .failure(Refusal("a key is twice in the headers map"))
            }
        }
        var bytes = http.host.utf8.count + http.path.utf8.count + 8
        var kept: [CheckAttributes.Field] = []
        kept.reserveCapacity(out.count)
        var framedByLength = false
        var framedByCoding = false
        for field in out {
            // Envoy lists the pseudo-headers too; they are the method, host and path above.
            if field.name.utf8.first == UInt8(ascii: ":") {
                guard Self.isToken(field.name, from: 1), Self.isFieldValue(field.value) else {
                    return .failure(Refusal("a pseudo-header is malformed"))
                }
                continue
            }
            bytes += field.name.utf8.count + field.value.utf8.count + 4
            guard Self.isToken(field.name, lowerCase: true) else {
                return .failure(Refusal("a header name is not a lower-case token"))
            }
            guard Self.isFieldValue(field.value) else {
                return .failure(Refusal("a header value has a control character"))
            }
            if field.name == "host" && field.value.lowercased() != http.host.lowercased() {
                return .failure(Refusal("a host field names another host than the request's"))
            }
            if field.name == "content-length" { framedByLength = true }
            if field.name == "transfer-encoding" { framedByCoding = true }
            if !Self.connectionFields.contains(field.name) { kept.append(field) }
        }
        // RFC 9112 §6.3: a request with both is the smuggling shape (two hops that pick
        // different framings read different requests); the gateway's own parser refuses it,
        // and a request described with both is refused the same.
        if framedByLength && framedByCoding {
            return .failure(Refusal("the request has both Transfer-Encoding and Content-Length"))
        }
        guard bytes <= limits.maxFieldBytes else {
            return .failure(Refusal("the header fields are too large", status: 431))
        }
        return .success(kept)
    }

    /// Fields of one connection's framing and routing (RFC 9110 §7.6.1, RFC 9113 §8.2.2), and
    /// `host`, which `http.host` already says.
    static let connectionFields: Set<String> = [
        "host", "content-length", "transfer-encoding", "te", "connection", "keep-alive", "proxy-connection",
        "upgrade"
    ]

    /// An IPv4 or IPv6 address as text (what Envoy puts in a socket address): hex digits,
    /// dots and colons only, at most 45 characters.
    static func isIPAddress(_ s: String) -> Bool {
        s.utf8.count <= 45
            && s.utf8.allSatisfy { c in
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: "."), UInt8(ascii: ":"):
                    true
                default: false
                }
            }
    }

    /// RFC 9110 §5.6.2 token, from the `from`th byte on (a pseudo-header's name,
    /// `:authority`, is one after its colon); `lowerCase`: no upper-case letter either.
    /// (On the UTF-8 bytes in place: these checks run on every field of every call.)
    static func isToken(_ s: String, from start: Int = 0, lowerCase: Bool = false) -> Bool {
        let bytes = s.utf8.span
        guard bytes.count > start else { return false }
        for i in start..<bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): continue
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): if lowerCase { return false }
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                continue
            default: return false
            }
        }
        return true
    }

    /// RFC 9110 §5.5 field-value: visible characters, space and tab, and obs-text; no
    /// control character. `target`: a request-target's, which has no space or tab either.
    static func isFieldValue(_ s: String, target: Bool = false) -> Bool {
        let bytes = s.utf8.span
        let lowest: UInt8 = target ? 0x21 : 0x20
        for i in bytes.indices {
            let c = bytes[i]
            guard c >= lowest || (c == 0x09 && !target), c != 0x7F else { return false }
        }
        return true
    }
}
