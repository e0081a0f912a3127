import JOSE
import Reactor

/// What an MCP route decides before it reads a body: the request's method
/// (MCPTransportMethods), and the form a resource URI is compared in (ResourceURI).
extension MCPFuzzEntry {
    /// Only a POST, or a GET or DELETE without content, passes; every other request is a 405
    /// naming the methods that pass, or a 400, never forwarded.
    static func method(_ line: String, hasContent: Bool) {
        let name = String(line.prefix { $0 != " " })
        let head = HTTPRequestHead(methodName: name, target: "/mcp", version: (1, 1), fields: HTTP1Fields())
        let refusal = MCPTransportMethods.refusal(head, hasContent: hasContent, requestID: "fuzz")
        let passes =
            head.method == .POST || ((head.method == .GET || head.method == .DELETE) && !hasContent)
        fuzzInvariant((refusal == nil) == passes, "mcp: method \(name.prefix(20)) judged wrongly")
        guard let refusal else { return }
        fuzzInvariant(refusal.status == 405 || refusal.status == 400, "mcp: a method's refusal is not 405 or 400")
        if refusal.status == 405 {
            fuzzInvariant(
                refusal.headers.contains { $0.0 == "Allow" && $0.1 == "GET, POST, DELETE" }, "mcp: a 405 without Allow")
        }
    }

    /// A URI in its compared form is its own form again, holds no segment a server could
    /// resolve otherwise (`.`, `..`, an empty one inside the path), no encoded unreserved
    /// character, a lower-case scheme, and no `localhost` file host.
    static func resourceURI(_ text: String) {
        guard case .success(let normal) = ResourceURI.normalized(text) else { return }
        fuzzInvariant(
            (try? ResourceURI.normalized(normal).get()) == normal, "mcp: a normalized URI normalizes otherwise")
        let bytes = Array(normal.utf8)
        let colon = bytes.firstIndex(of: UInt8(ascii: ":")) ?? 0
        fuzzInvariant(
            !bytes[..<colon].contains { $0 >= 0x41 && $0 <= 0x5A }, "mcp: a normalized URI's scheme has upper case")
        var path = bytes[(colon + 1)...]
        if let mark = path.firstIndex(of: UInt8(ascii: "?")) { path = path[..<mark] }
        if path.starts(with: [0x2F, 0x2F]) {
            let rest = path.dropFirst(2)
            path = rest[(rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex)...]
        }
        let segments = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        for (index, segment) in segments.enumerated() {
            fuzzInvariant(
                !segment.elementsEqual([0x2E]) && !segment.elementsEqual([0x2E, 0x2E]),
                "mcp: a normalized URI keeps a dot segment")
            fuzzInvariant(
                !segment.isEmpty || index == 0 || index == segments.count - 1,
                "mcp: a normalized URI keeps an empty segment")
        }
        let unreserved = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        var i = 0
        while i + 2 < bytes.count {
            if bytes[i] == UInt8(ascii: "%"),
                let decoded = UInt8(String(decoding: bytes[(i + 1)...(i + 2)], as: UTF8.self), radix: 16)
            {
                fuzzInvariant(!unreserved.contains(decoded), "mcp: a normalized URI encodes an unreserved character")
            }
            i += 1
        }
        fuzzInvariant(
            !normal.lowercased().hasPrefix("file://localhost/"), "mcp: a normalized file URI names localhost")
    }
}
