/// Where a browser may be sent back after a login or logout (`rd`): a path on this origin,
/// or an absolute URL whose host is on an allow-list — never anything a browser would read
/// as another origin (RFC 9700 §4.11: open redirectors). Checked on the raw value, and again
/// after percent-decoding, so encoded forms of `//`, `\` or a scheme do not slip through.
/// Dot segments are resolved first (RFC 3986 §5.2.4), as the browser will: `/.//evil.test`
/// stays same-origin in a browser, but its path `//evil.test` turns into an open redirect at
/// any upstream that echoes the path into a redirect of its own.
public struct ReturnTo: Sendable {
    /// Hosts allowed in absolute targets: exact names or `*.suffix` (any subdomain depth).
    public var allowedHosts: [String]
    /// Allow http:// targets (local development); https only by default.
    public var allowHTTP = false

    public init(allowedHosts: [String] = [], allowHTTP: Bool = false) {
        self.allowedHosts = allowedHosts.map { $0.lowercased() }
        self.allowHTTP = allowHTTP
    }

    /// The target to redirect to, or nil if it is not allowed (the caller falls back to "/").
    public func check(_ target: String) -> String? {
        guard !target.isEmpty, target.utf8.count <= 2048 else { return nil }
        // Control characters (including CR/LF: header splitting), spaces, backslashes —
        // browsers treat `\` like `/` — anywhere, raw or encoded.
        guard let decoded = FormEncoding.unescape(Substring(target).replacingPlus()) else { return nil }
        // Raw: no space or control character at all (not a valid URL). Decoded: no control
        // character (an encoded space is a fine path), and no backslash either way.
        if target.utf8.contains(where: { $0 < 0x21 || $0 == 0x7f || $0 == UInt8(ascii: "\\") }) { return nil }
        if decoded.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f || $0 == UInt8(ascii: "\\") }) { return nil }
        if target.hasPrefix("/") {
            // "//evil" and "/%2Fevil" (decoded "//evil") are network-path references; so are
            // "/.//evil" and "/%2e%2e//evil" once their dot segments are gone.
            let normalized = Self.resolvingDotSegments(target)
            guard !normalized.hasPrefix("//"), !Self.resolvingDotSegments(decoded).hasPrefix("//") else { return nil }
            return normalized
        }
        // Anything else must be an absolute http(s) URL to an allowed host: "https:evil",
        // "javascript:…", "evil.com/x" (relative, read as a path by some and a host by others) fail.
        let lower = target.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") {
            scheme = "https://"
        } else if allowHTTP && lower.hasPrefix("http://") {
            scheme = "http://"
        } else {
            return nil
        }
        let rest = lower.dropFirst(scheme.count)
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<end]
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("%") else { return nil }
        var host = Substring(authority)
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            // RFC 3986 §3.2.3 port, and a real one: 1–65535 in ASCII digits, never empty.
            let port = host[host.index(after: colon)...]
            guard (1...5).contains(port.utf8.count), port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let n = Int(port), (1...65535).contains(n)
            else { return nil }
            host = host[..<colon]
        }
        guard isAllowed(String(host)) else { return nil }
        // The path on the allowed host must not become "//…" either (see above).
        let path = rest[end...]
        if path.hasPrefix("/") {
            guard !Self.resolvingDotSegments(String(path)).hasPrefix("//"),
                let decodedPath = FormEncoding.unescape(Substring(String(path)).replacingPlus()),
                !Self.resolvingDotSegments(decodedPath).hasPrefix("//")
            else { return nil }
        }
        return target
    }

    /// RFC 3986 §5.2.4 remove_dot_segments on the path of `target` (up to `?` or `#`); the
    /// query and fragment stay as they are.
    static func resolvingDotSegments(_ target: String) -> String {
        let cut = target.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? target.endIndex
        var input = Substring(target[..<cut])
        var output: [Substring] = []  // each piece is "/segment" (or a leading "segment")
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                _ = output.popLast()
            } else if input == "/.." {
                input = "/"
                _ = output.popLast()
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let next = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<next])
                input = input[next...]
            }
        }
        return output.joined() + target[cut...]
    }

    func isAllowed(_ host: String) -> Bool {
        allowedHosts.contains { pattern in
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1 }
            return host == pattern
        }
    }
}

extension Substring {
    /// In a URL target "+" is a literal plus, not a space as in forms.
    fileprivate func replacingPlus() -> Substring { Substring(self.map { $0 == "+" ? "%2B" : String($0) }.joined()) }
}
