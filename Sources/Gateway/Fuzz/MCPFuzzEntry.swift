import Foundation
import JOSE
import OAuth

/// Entry point for fuzzing what an MCP route reads of a POST before the upstream hears of it
/// (the libFuzzer target `MCPFuzz` in `fuzz/` and the corpus replay test call this): the
/// `Content-Type` check and the JSON-RPC message whose method and target the rules judge; the
/// headers that mirror it (MCP 2026-07-28); and what it reads of the answer to a `tools/list`.
/// Returns normally on every input; a failed `fuzzInvariant` is a finding.
public enum MCPFuzzEntry {
    /// The first line is a `Content-Type` value, the rest a request body. The first line's
    /// first word is also the request's method (MCPFuzzEntry+Transport), and the whole line a
    /// resource URI.
    public static func all(_ data: [UInt8]) {
        let newline = data.firstIndex(of: UInt8(ascii: "\n")) ?? data.count
        let line = String(decoding: data[..<newline], as: UTF8.self)
        contentType(line)
        method(line, hasContent: newline + 1 < data.count)
        resourceURI(line)
        message(Array(data[min(newline + 1, data.count)...]))
        // The first line as an `Mcp-Name` beside that body (MCPFuzzEntry+Headers).
        mirroredHeaders(nameLine: line, body: Array(data[min(newline + 1, data.count)...]))
        // The whole input as a body too: the seeds are bodies.
        message(data)
        // And as an upstream's SSE answer to a tools/list (MCPFuzzEntry+EventStream).
        eventStream(data)
    }

    /// An accepted media type is application/json, whatever its case and parameters.
    static func contentType(_ value: String) {
        guard MCPBodyRules.isJSON(value) else { return }
        let type = value.split(separator: ";", omittingEmptySubsequences: false)[0]
        fuzzInvariant(
            type.trimmingCharacters(in: .whitespaces).lowercased() == "application/json",
            "mcp: a media type other than application/json is judged as JSON")
    }

    /// A message the gateway accepts is the message another JSON parser reads: the same
    /// method and target (Foundation's JSONSerialization, a different parser, is the other
    /// side, as the MCP server's would be), and the same again once re-serialized. A call of a
    /// method that names a tool, resource or prompt is never accepted without one: that would
    /// be a call no per-tool rule can judge.
    static func message(_ body: [UInt8]) {
        let read = MCPMessage.parse(body)
        if case .failure(let error) = read, error.code == .parseError {
            // The message is read without a tree (JSONPicker): it must refuse what the parser does.
            fuzzInvariant(
                (try? JSONParser.parse(body)) == nil, "mcp: a JSON text the parser accepts is called unreadable")
        }
        guard case .success(let m) = read else { return }
        fuzzInvariant(
            (m.method.flatMap(MCPTarget.member(of:)) != nil) == (m.target != nil),
            "mcp: a call's target and its method disagree")
        // Re-serialized through the strict parser's own value: the same message.
        if let value = try? JSONParser.parse(body) {
            let again = try? MCPMessage.parse(Array(JSONSerializer.serialize(value).utf8)).get()
            fuzzInvariant(
                again?.kind == m.kind && again?.target == m.target, "mcp: a message reads otherwise once re-serialized")
            let params = value.object?["params"]?.object
            let revision = params?["_meta"]?.object?["io.modelcontextprotocol/protocolVersion"]?.string
            let named = m.method.flatMap(MCPMirroredHeaders.namedMember(of:)).flatMap { params?[$0]?.string }
            fuzzInvariant(
                (m.method == nil || m.protocolVersion == revision) && m.named == named && m.id == value.object?["id"],
                "mcp: the message's revision, name or id is not the parsed tree's")
        } else {
            fuzzInvariant(false, "mcp: a message was accepted that the JSON parser refuses")
        }
        differential(body, m)
        if case .resource(let uri) = m.target { resourceURI(uri) }
    }

    /// What Foundation reads of the same bytes, where it reads them at all.
    static func differential(_ body: [UInt8], _ m: MCPMessage) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]),
            let dict = object as? [String: Any]
        else { return }
        if let method = m.method {
            fuzzInvariant(dict["method"] as? String == method, "mcp: another parser reads another method")
        }
        if let target = m.target, let member = m.method.flatMap(MCPTarget.member(of:)) {
            let other = (dict["params"] as? [String: Any])?[member.name] as? String
            fuzzInvariant(
                other.flatMap { try? member.make($0).get() } == target,
                "mcp: another parser reads another \(member.name)")
        }
    }
}
