import JOSE
import Reactor

/// Parsers for the scalar value forms the config file uses. Each returns nil when the text
/// is not of that form; the caller reports the problem with its key path.
enum ConfigValues {
    /// "250ms", "2s", "5m", "1h", or a plain number of seconds, at most `longestDuration`.
    static func duration(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            // "5m" must not be read as "5" + "m" of "ms": checked in order above.
            guard let v = Double(number) else { return nil }
            return bounded(v * scale)
        }
        return Double(text).flatMap(bounded)
    }

    /// The longest duration any key takes: ten years. Spans are added to the clock and to a
    /// credential's dates as Int64 seconds or microseconds, and a timer's as a timeval: a
    /// bound here keeps every such sum far from a trap (`NumericDate`).
    static let longestDuration = Double(NumericDate.longestLifetime)

    /// Checked after scaling: "1e306h" is finite as written, not once multiplied.
    private static func bounded(_ seconds: Double) -> Double? {
        seconds >= 0 && seconds.isFinite && seconds <= longestDuration ? seconds : nil
    }

    /// "4MB", "512KB", "1GB", "100B" or a plain number of bytes (binary multiples).
    static func size(_ text: String) -> Int? {
        let upper = text.uppercased()
        let units: [(String, Int)] = [
            ("KB", 1 << 10), ("MB", 1 << 20), ("GB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("B", 1)
        ]
        for (suffix, scale) in units where upper.hasSuffix(suffix) {
            guard let v = Int(upper.dropLast(suffix.count)), v >= 0 else { return nil }
            let (r, overflow) = v.multipliedReportingOverflow(by: scale)
            return overflow ? nil : r
        }
        return Int(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// "host:port", "[v6]:port" or ":port" (all interfaces).
    static func socketAddress(_ text: String) -> SocketAddress? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        if host.isEmpty { host = "0.0.0.0" }
        guard let port = UInt16(portText), port > 0 else { return nil }
        return SocketAddress(host: String(host), port: port)
    }

    struct ParsedURL {
        var scheme: String
        var host: String
        var port: UInt16
        var path: String
    }

    /// An absolute http(s) URL with no query, fragment or userinfo.
    static func url(_ text: String) -> ParsedURL? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = text[schemeEnd.upperBound...]
        if rest.contains("?") || rest.contains("#") || rest.contains("@") { return nil }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash])
        var path = String(rest[slash...])
        if path.hasSuffix("/") { path.removeLast() }
        let defaultPort: UInt16 = scheme == "https" ? 443 : 80
        let addr: SocketAddress?
        if authority.hasSuffix("]") || !authority.contains(":") {
            let h = authority.hasPrefix("[") ? String(authority.dropFirst().dropLast()) : authority
            addr = h.isEmpty ? nil : SocketAddress(host: h, port: defaultPort)
        } else {
            addr = socketAddress(authority)
        }
        guard let addr, !addr.host.isEmpty else { return nil }
        return ParsedURL(scheme: scheme, host: addr.host.lowercased(), port: addr.port, path: path)
    }
}
