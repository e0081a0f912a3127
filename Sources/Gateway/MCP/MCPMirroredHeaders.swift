import JOSE
import Reactor

/// The headers an MCP 2026-07-28 client mirrors from a POST's body (SEP-2243), so that
/// gateways, rate limiters and WAFs can route on them without reading it: `Mcp-Method` (the
/// JSON-RPC `method`), `Mcp-Name` (`params.name` or `params.uri`) and `MCP-Protocol-Version`.
/// The server trusts the headers; the gateway judges the body. So the two must say the same:
/// an intermediary that reads the body MUST refuse a request whose headers disagree with it
/// (400, JSON-RPC `-32020` HeaderMismatch), or the copy it judged is not the copy that runs.
///
/// Names are case-insensitive (the fields'), values case-sensitive, surrounding whitespace
/// trimmed. `Mcp-Name` may come in its sentinel form, `=?base64?…?=`, for a value that is no
/// plain field value (non-ASCII, controls, significant whitespace).
struct MCPMirroredHeaders: Equatable {
    var method: String?
    var name: String?
    var protocolVersion: String?

    /// The first revision whose requests carry the headers (and need them).
    static let mirroringVersion = "2026-07-28"

    /// The params member `Mcp-Name` mirrors for `method`; nil when it mirrors none.
    static func namedMember(of method: String) -> String? {
        switch method {
        case "tools/call", "prompts/get": "name"
        case "resources/read", "resources/subscribe", "resources/unsubscribe": "uri"
        default: nil
        }
    }

    /// The headers as the request carries them; a header sent twice, or an `Mcp-Name` whose
    /// sentinel form does not decode to UTF-8, is a mismatch of its own.
    static func read(_ fields: HTTP1Fields) -> Result<MCPMirroredHeaders, MCPHeaderMismatch> {
        var method = Sent()
        var version = Sent()
        var name = Sent()
        // One pass over the fields; a name is compared only where its length is one of theirs.
        fields.forEachField { field, value in
            switch field.count {
            case 8: if HeaderRules.equals(field, Self.nameField) { name.add(value) }
            case 10: if HeaderRules.equals(field, Self.methodField) { method.add(value) }
            case 20: if HeaderRules.equals(field, Self.versionField) { version.add(value) }
            default: break
            }
        }
        if method.count > 1 { return .failure(MCPHeaderMismatch("Mcp-Method is sent more than once")) }
        if version.count > 1 { return .failure(MCPHeaderMismatch("MCP-Protocol-Version is sent more than once")) }
        if name.count > 1 { return .failure(MCPHeaderMismatch("Mcp-Name is sent more than once")) }
        var headers = MCPMirroredHeaders(method: method.value, protocolVersion: version.value)
        if let raw = name.value {
            guard let decoded = decodedName(raw) else {
                return .failure(MCPHeaderMismatch("Mcp-Name is not a valid =?base64?…?= value"))
            }
            headers.name = decoded
        }
        return .success(headers)
    }

    /// The three names, lowercase, as `HeaderRules.equals` compares them.
    static let methodField = Array("mcp-method".utf8)
    static let nameField = Array("mcp-name".utf8)
    static let versionField = Array("mcp-protocol-version".utf8)

    /// One mirrored header as sent: its first value and how many fields carry it.
    struct Sent {
        var value: String?
        var count = 0

        /// Adds one field's value, trimmed of OWS (RFC 9110 §5.6.3: a parsed field has none
        /// around it, a section built by hand may).
        mutating func add(_ bytes: Span<UInt8>) {
            count += 1
            guard value == nil else { return }
            var start = 0
            var end = bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            value = String(decodingUTF8: bytes.extracting(start..<end))
        }
    }

    /// `Mcp-Name` in its plain or its sentinel form (`=?base64?` standard Base64 `?=`, UTF-8).
    static func decodedName(_ raw: String) -> String? {
        let prefix = "=?base64?"
        let suffix = "?="
        guard raw.hasPrefix(prefix), raw.hasSuffix(suffix), raw.utf8.count >= prefix.utf8.count + suffix.utf8.count
        else { return raw }
        let inner = raw.dropFirst(prefix.count).dropLast(suffix.count)
        guard let bytes = Base64.decodeStandard(String(inner)) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Why these headers do not say what `message` says; nil when they agree. At the
    /// mirroring revision or later (the header's, else the body's `_meta`), a request (it has
    /// an `id`; a notification's headers are the spec's to leave undefined) must carry all of
    /// them; at any revision, each one present must equal the body.
    func mismatch(with message: MCPMessage) -> MCPHeaderMismatch? {
        let version = protocolVersion ?? message.protocolVersion
        if let version, version >= Self.mirroringVersion, message.id != nil, let method = message.method {
            if protocolVersion == nil { return MCPHeaderMismatch("MCP-Protocol-Version is required at \(version)") }
            if self.method == nil { return MCPHeaderMismatch("Mcp-Method is required at \(version)") }
            if Self.namedMember(of: method) != nil, !message.removed, name == nil {
                return MCPHeaderMismatch("Mcp-Name is required for \(method) at \(version)")
            }
        }
        if let said = self.method, said != message.method {
            return MCPHeaderMismatch("Mcp-Method does not match the body's method")
        }
        if let said = name, said != message.named {
            return MCPHeaderMismatch("Mcp-Name does not match the body's params")
        }
        if let said = protocolVersion, let body = message.protocolVersion, said != body {
            return MCPHeaderMismatch("MCP-Protocol-Version does not match the body's _meta")
        }
        return nil
    }
}

/// A mirrored header that is missing, malformed or unlike the body: why, for the JSON-RPC
/// error's message (never the header's value, which is the client's text).
struct MCPHeaderMismatch: Error, Equatable {
    let reason: String
    init(_ reason: String) { self.reason = reason }

    /// The answer: 400 with the JSON-RPC error `-32020` and the request's id.
    func response(id: JSONValue?) -> GatewayResponse {
        GatewayResponse(
            status: 400, body: JSONRPCError(.headerMismatch, reason, id: id).body, contentType: "application/json",
            detail: "mcp: \(reason)", reason: "mcp_header_mismatch")
    }
}
