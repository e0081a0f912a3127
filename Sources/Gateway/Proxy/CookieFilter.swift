/// Removes named cookies from a Cookie header value (RFC 6265 §4.2.1: `name=value` pairs
/// separated by "; "); nil when nothing is left. Works on the header's bytes: it runs on every
/// request of a login route.
enum CookieFilter {
    static func without(_ names: Set<String>, _ header: String) -> String? {
        var kept: [UInt8] = []
        var header = header
        header.withUTF8 { b in
            kept.reserveCapacity(b.count)
            var i = 0
            while i < b.count {
                var end = i
                while end < b.count && b[end] != UInt8(ascii: ";") { end += 1 }
                var start = i
                while start < end && b[start] == UInt8(ascii: " ") { start += 1 }
                var eq = start
                while eq < end && b[eq] != UInt8(ascii: "=") { eq += 1 }
                // Names are short: only they become strings, never the (long) values.
                if start < end && !names.contains(String(decoding: UnsafeBufferPointer(rebasing: b[start..<eq]), as: UTF8.self)) {
                    if !kept.isEmpty { kept += [UInt8(ascii: ";"), UInt8(ascii: " ")] }
                    kept += UnsafeBufferPointer(rebasing: b[start..<end])
                }
                i = end + 1
            }
        }
        return kept.isEmpty ? nil : String(decoding: kept, as: UTF8.self)
    }
}
