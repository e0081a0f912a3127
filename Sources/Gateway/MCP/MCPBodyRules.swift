import Reactor

/// What an MCP POST's framing must be for the gateway to read the same message the server
/// will (MCP transports, streamable HTTP: a JSON-RPC message as `application/json`).
enum MCPBodyRules {
    /// Why the body cannot be judged; nil: it can. A body in another media type, in another
    /// charset, or under a content coding could be read differently by the server, so a call
    /// could pass as something else (RFC 9110 §15.5.16: 415 for both).
    static func refusal(_ fields: HTTP1Fields) -> String? {
        // What every MCP client sends, decided on the field bytes without building a string
        // (the general reading below cost 11,000 instructions a call): one Content-Type,
        // exactly `application/json` in any case, and no Content-Encoding.
        var typeCount = 0
        var plainJSON = false
        var codings = 0
        fields.forEachValue(named: "Content-Type") { value in
            typeCount += 1
            plainJSON = isPlainJSON(value)
        }
        fields.forEachValue(named: "Content-Encoding") { _ in codings += 1 }
        if typeCount == 1 && plainJSON && codings == 0 { return nil }
        let types = fields.values("Content-Type")
        guard types.count == 1, isJSON(types[0]) else {
            return "an MCP request body must be one JSON-RPC message as application/json (charset utf-8, if any)"
        }
        for coding in fields.values("Content-Encoding") {
            let codings = coding.split(separator: ",").map { $0.trimmingOWS.lowercased() }
            if codings.contains(where: { $0 != "identity" }) {
                return "an MCP request body must not carry a content coding"
            }
        }
        return nil
    }

    /// Whether `value` is `application/json` with no parameter, in any case (RFC 9110 §8.3.1).
    static func isPlainJSON(_ value: Span<UInt8>) -> Bool {
        let expected = plainJSONBytes
        guard value.count == expected.count else { return false }
        for i in 0..<value.count {
            var c = value[i]
            if c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") { c |= 0x20 }
            if c != expected[i] { return false }
        }
        return true
    }
    private static let plainJSONBytes = Array("application/json".utf8)

    /// `application/json`, with at most a `charset` parameter of `utf-8` (RFC 8259 §8.1:
    /// JSON exchanged between systems is UTF-8; RFC 9110 §8.3.1: names are case-insensitive).
    static func isJSON(_ value: String) -> Bool {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        guard parts[0].trimmingOWS.lowercased() == "application/json" else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0].trimmingOWS.lowercased() == "charset" else { return false }
            var charset = Substring(pair[1].trimmingOWS)
            if charset.count >= 2, charset.hasPrefix("\""), charset.hasSuffix("\"") {
                charset = charset.dropFirst().dropLast()
            }
            guard charset.lowercased() == "utf-8" else { return false }
        }
        return true
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (RFC 9110 §5.6.3 OWS). On the UTF-8 bytes
    /// (both are ASCII, so every cut is at a character's edge): reading by Character cost
    /// about 1,700 instructions a header on the MCP path.
    var trimmingOWS: String {
        let whole = String(self)
        let bytes = whole.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while start < end {
            let last = bytes.index(before: end)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            end = last
        }
        if start == bytes.startIndex && end == bytes.endIndex { return whole }
        return String(whole[start..<end])
    }
}
