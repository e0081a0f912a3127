import Reactor

/// Removes named cookies from a Cookie header value (RFC 6265 §4.2.1: `name=value` pairs
/// separated by "; "); nil when nothing is left. Works on the header's bytes (`Cookies.pairs`):
/// it runs on every request of a login route.
enum CookieFilter {
    static func without(_ names: Set<String>, _ header: String) -> String? {
        var kept: [UInt8] = []
        Cookies.pairs(header) { name, value in
            // Names are short: only they become strings, never the (long) values.
            guard !names.contains(String(decodingUTF8: name)) else { return }
            if !kept.isEmpty { kept += [UInt8(ascii: ";"), UInt8(ascii: " ")] }
            kept.append(copying: name)
            kept.append(UInt8(ascii: "="))
            kept.append(copying: value)
        }
        return kept.isEmpty ? nil : String(decoding: kept, as: UTF8.self)
    }
}
