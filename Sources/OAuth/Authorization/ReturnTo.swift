/// Where a browser may be sent back after a login or logout (`rd`): a path on this origin,
/// or an absolute URL whose host is on an allow-list — never anything a browser would read
/// as another origin (RFC 9700 §4.11: open redirectors). Read as bytes, as browsers and
/// upstreams read a URL (a "/" followed by a combining mark is still a "/" to them, though
/// Swift's `Character` sees one grapheme). Checked on the raw value and on the value
/// returned, each again after every round of percent-decoding, down to the last: an upstream
/// that decodes the path (once, or again on a value it had already decoded) must not find
/// `//`, `\` or a control character in it either. Dot segments are resolved first (RFC 3986 §5.2.4), as the browser will:
/// `/.//evil.test` stays same-origin in a browser, but its path `//evil.test` turns into an
/// open redirect at any upstream that echoes the path into a redirect of its own.
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
        let raw = Array(target.utf8)
        guard !raw.isEmpty, raw.count <= 2048 else { return nil }
        // Raw: no space or control character at all (not a valid URL — and CR/LF would split
        // the Location header), no backslash (browsers treat `\` like `/`).
        if raw.contains(where: { $0 < 0x21 || $0 == 0x7F || $0 == Self.backslash }) { return nil }
        // The first decoding must be well-formed ("+" is a literal plus in a URL).
        guard FormEncoding.unescape(Substring(target).replacingPlus()) != nil else { return nil }
        if raw[0] == Self.slash {
            // "//evil" and "/%2Fevil" (decoded "//evil") are network-path references; so are
            // "/.//evil" and "/%2e%2e//evil" once their dot segments are gone. What is returned
            // is checked as well: removing "/a%2F%2F/.." from "/a%2F%2F/../%2F%2Fevil" leaves
            // "/%2F%2Fevil", though the decoded input resolved to "/a///evil".
            let resolved = Self.resolvingDotSegments(raw)
            guard Self.staysOnOrigin(raw, pathStart: 0), Self.staysOnOrigin(resolved, pathStart: 0) else { return nil }
            return String(decoding: resolved, as: UTF8.self)
        }
        // Anything else must be an absolute http(s) URL to an allowed host: "https:evil",
        // "javascript:…", "evil.com/x" (relative, read as a path by some and a host by others) fail.
        let lower = raw.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let schemeLength: Int
        if lower.starts(with: "https://".utf8) {
            schemeLength = 8
        } else if allowHTTP && lower.starts(with: "http://".utf8) {
            schemeLength = 7
        } else {
            return nil
        }
        let end = lower[schemeLength...].firstIndex(where: Self.endsAuthority) ?? lower.count
        var host = lower[schemeLength..<end]
        guard !host.isEmpty, !host.contains(UInt8(ascii: "@")), !host.contains(UInt8(ascii: "%")) else { return nil }
        if let colon = host.lastIndex(of: UInt8(ascii: ":")), host.last != UInt8(ascii: "]") {
            // RFC 3986 §3.2.3 port, and a real one: 1–65535 in ASCII digits, never empty.
            let port = host[(colon + 1)...]
            guard (1...5).contains(port.count), port.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let n = Int(String(decoding: port, as: UTF8.self)), (1...65535).contains(n)
            else { return nil }
            host = host[..<colon]
        }
        // An allowed host is ASCII: Unicode case mapping would let "K" (U+212A) pass as "k".
        guard host.allSatisfy({ $0 < 0x80 }), isAllowed(String(decoding: host, as: UTF8.self)) else { return nil }
        // The path on the allowed host must not become "//…" either (see above).
        guard Self.staysOnOrigin(raw, pathStart: end) else { return nil }
        return target
    }

    private static let slash = UInt8(ascii: "/")
    private static let backslash = UInt8(ascii: "\\")

    private static func endsAuthority(_ c: UInt8) -> Bool {
        c == UInt8(ascii: "/") || c == UInt8(ascii: "?") || c == UInt8(ascii: "#")
    }

    /// The target and each of its percent-decodings (until one changes nothing) hold no
    /// control character or backslash, and the path from `pathStart`, dot segments removed,
    /// does not start with "//".
    private static func staysOnOrigin(_ raw: [UInt8], pathStart: Int) -> Bool {
        var level = raw
        while true {
            if level.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == backslash }) { return false }
            if pathStart < level.count && level[pathStart] == slash {
                let path = resolvingDotSegments(Array(level[pathStart...]))
                if path.count >= 2 && path[0] == slash && path[1] == slash { return false }
            }
            let next = percentDecoded(level)
            if next == level { return true }
            level = next
        }
    }

    /// One round of percent-decoding: each `%XX` of two hex digits becomes its byte; any
    /// other "%" stays (a later round may find "%" and two hex digits only after an earlier
    /// one decoded them). Escapes in the scheme and authority cannot exist (refused above).
    static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = hex(bytes[i + 1]),
                let lo = hex(bytes[i + 2])
            {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// RFC 3986 §5.2.4 remove_dot_segments on the path of `target` (up to `?` or `#`); the
    /// query and fragment stay as they are.
    static func resolvingDotSegments(_ target: [UInt8]) -> [UInt8] {
        let cut = target.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? target.count
        var input = target[..<cut]
        var output: [ArraySlice<UInt8>] = []  // each piece is "/segment" (or a leading "segment")
        while !input.isEmpty {
            if input.starts(with: "../".utf8) {
                input = input.dropFirst(3)
            } else if input.starts(with: "./".utf8) {
                input = input.dropFirst(2)
            } else if input.starts(with: "/./".utf8) {
                input = input.dropFirst(2)
            } else if input.elementsEqual("/.".utf8) {
                input = [slash]
            } else if input.starts(with: "/../".utf8) {
                input = input.dropFirst(3)
                _ = output.popLast()
            } else if input.elementsEqual("/..".utf8) {
                input = [slash]
                _ = output.popLast()
            } else if input.elementsEqual(".".utf8) || input.elementsEqual("..".utf8) {
                input = []
            } else {
                let start = input.first == slash ? input.startIndex + 1 : input.startIndex
                let next = input[start...].firstIndex(of: slash) ?? input.endIndex
                output.append(input[..<next])
                input = input[next...]
            }
        }
        return output.flatMap { $0 } + target[cut...]
    }

    func isAllowed(_ host: String) -> Bool {
        allowedHosts.contains { pattern in
            if pattern.hasPrefix("*.") {
                let suffix = pattern.utf8.dropFirst()
                return host.utf8.count > suffix.count && host.utf8.suffix(suffix.count).elementsEqual(suffix)
            }
            return host == pattern
        }
    }
}

extension Substring {
    /// In a URL target "+" is a literal plus, not a space as in forms.
    fileprivate func replacingPlus() -> Substring { Substring(self.map { $0 == "+" ? "%2B" : String($0) }.joined()) }
}
