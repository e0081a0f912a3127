import JOSE
import Reactor

extension MCPFuzzEntry {
    /// The mirrored headers (SEP-2243) against a body: headers made from what the gateway read
    /// of the message always agree with it; a `Mcp-Name` that passes says what the body names
    /// (in its plain or its Base64 form); and the Base64 form of any name decodes back to it.
    static func mirroredHeaders(nameLine line: String, body: [UInt8]) {
        if let decoded = MCPMirroredHeaders.decodedName(line) {
            let again = "=?base64?" + Base64.standard(Array(decoded.utf8)) + "?="
            fuzzInvariant(
                MCPMirroredHeaders.decodedName(again) == decoded, "mcp: a name's Base64 form does not decode to it")
        }
        // Read as the stage reads a request whose MCP-Protocol-Version says 2026-07-28: a method
        // that revision removed names a target only where its body names one.
        guard case .success(let message) = MCPMessage.parse(body, headerVersion: MCPMirroredHeaders.mirroringVersion),
            let method = message.method
        else { return }
        fuzzInvariant(
            !message.removed || message.target == nil || message.named != nil,
            "mcp: a removed method names a target its body does not name")
        var fields = HTTP1Fields()
        fields.append("MCP-Protocol-Version", MCPMirroredHeaders.mirroringVersion)
        if FieldSyntax.isFieldValue(method) { fields.append("Mcp-Method", method) }
        if let named = message.named {
            fields.append("Mcp-Name", "=?base64?" + Base64.standard(Array(named.utf8)) + "?=")
        }
        // A method with surrounding whitespace has no plain header form (values are trimmed):
        // such a request is refused as a mismatch, which fails closed.
        if case .success(let own) = MCPMirroredHeaders.read(fields), FieldSyntax.isFieldValue(method),
            method == method.trimmingOWS,
            message.protocolVersion == nil || message.protocolVersion == MCPMirroredHeaders.mirroringVersion
        {
            fuzzInvariant(own.mismatch(with: message) == nil, "mcp: headers made from the body disagree with it")
        }
        guard FieldSyntax.isFieldValue(line), !line.isEmpty else { return }
        var named = HTTP1Fields()
        named.append("Mcp-Name", line)
        if case .success(let headers) = MCPMirroredHeaders.read(named), headers.mismatch(with: message) == nil,
            let said = headers.name
        {
            fuzzInvariant(said == message.named, "mcp: an Mcp-Name that passes names something else")
        }
    }
}
