import JOSE

/// `ReturnTo`: what it accepts is a place a browser may be sent (RFC 9700 §4.11).
extension OAuthFuzzEntry {
    /// The allow-list of the second policy the target is checked under.
    public static let allowedReturnHosts = ["app.example.com", "*.apps.example.com"]

    /// Checked under two policies: no allowed host (only same-origin paths may pass) and an
    /// allow-list with an exact and a wildcard host, http allowed. An accepted value is
    /// checked by `checkReturnTarget`, and accepted again unchanged.
    public static func returnTo(_ target: String) {
        for policy in [ReturnTo(), ReturnTo(allowedHosts: allowedReturnHosts, allowHTTP: true)] {
            guard let accepted = policy.check(target) else { continue }
            checkReturnTarget(accepted, allowedHosts: policy.allowedHosts, allowHTTP: policy.allowHTTP)
            fuzzInvariant(policy.check(accepted) == accepted, "returnTo: an accepted target changes when checked again")
        }
    }

    /// What any accepted return target must be: a path on this origin, never scheme-relative
    /// ("//host", "/\host"), or an absolute http(s) URL whose host is on `allowedHosts`. No
    /// space, control character or backslash raw; none of control characters or backslashes
    /// once percent-decoded, however many times; and no decoding of it, after RFC 3986 §5.2.4
    /// dot-segment removal, turns its path into "//…" (an upstream that decodes and echoes the
    /// path into a redirect of its own would make it scheme-relative).
    public static func checkReturnTarget(_ value: String, allowedHosts: [String], allowHTTP: Bool) {
        let raw = Array(value.utf8)
        fuzzInvariant(!raw.isEmpty, "returnTo: empty target accepted")
        fuzzInvariant(
            !raw.contains { $0 < 0x21 || $0 == 0x7F || $0 == UInt8(ascii: "\\") },
            "returnTo: a space, control character or backslash accepted")
        let pathStart: Int
        if raw[0] == UInt8(ascii: "/") {
            pathStart = 0
        } else {
            pathStart = absoluteTargetPathStart(raw, allowedHosts: allowedHosts, allowHTTP: allowHTTP)
        }
        var level = raw
        while true {
            fuzzInvariant(
                !level.contains { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") },
                "returnTo: an encoded control character or backslash accepted")
            let path = Array(
                level[min(pathStart, level.count)...].prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
            if path.first == UInt8(ascii: "/") {
                fuzzInvariant(
                    !removingDotSegments(path).starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]),
                    "returnTo: the path is scheme-relative once decoded and dot segments removed")
            }
            let next = percentDecoded(level)
            if next == level { break }
            level = next
        }
    }

    /// An absolute target: http(s) as allowed, an authority without userinfo or escapes whose
    /// host (ASCII, compared lowercase, port 1–65535 if any) is on the allow-list. Returns
    /// where its path starts.
    private static func absoluteTargetPathStart(_ raw: [UInt8], allowedHosts: [String], allowHTTP: Bool) -> Int {
        fuzzInvariant(!allowedHosts.isEmpty, "returnTo: a target that is not a path accepted with no allowed host")
        let lower = raw.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let scheme: Int
        if lower.starts(with: Array("https://".utf8)) {
            scheme = 8
        } else if allowHTTP && lower.starts(with: Array("http://".utf8)) {
            scheme = 7
        } else {
            fatalError("returnTo: an absolute target with another scheme accepted")
        }
        let end =
            lower[scheme...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            } ?? lower.count
        var host = Array(lower[scheme..<end])
        fuzzInvariant(
            !host.isEmpty && !host.contains(UInt8(ascii: "@")) && !host.contains(UInt8(ascii: "%")),
            "returnTo: an authority with userinfo or escapes accepted")
        if let colon = host.lastIndex(of: UInt8(ascii: ":")), host.last != UInt8(ascii: "]") {
            let port = host[(colon + 1)...]
            fuzzInvariant(
                (1...5).contains(port.count) && port.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                    && (1...65535).contains(Int(String(decoding: port, as: UTF8.self)) ?? 0),
                "returnTo: a port no host has accepted")
            host.removeSubrange(colon...)
        }
        fuzzInvariant(host.allSatisfy { $0 < 0x80 }, "returnTo: a host that is not ASCII accepted")
        let name = String(decoding: host, as: UTF8.self)
        let allowed = allowedHosts.contains { pattern in
            guard pattern.hasPrefix("*.") else { return name == pattern }
            let suffix = pattern.utf8.dropFirst()
            return host.count > suffix.count && host.suffix(suffix.count).elementsEqual(suffix)
        }
        fuzzInvariant(allowed, "returnTo: an absolute target to a host not on the allow-list accepted")
        return end
    }
}
