import JOSE

/// `HTU`: the DPoP `htu` comparison (RFC 9449 §4.3 check 9).
extension OAuthFuzzEntry {
    /// A URI as RFC 3986 reads it, for the checks.
    struct Resource {
        /// What names the resource: scheme and host lowercase, the port's value without
        /// leading zeros (nil: the scheme's default), the path ("/" when empty) through
        /// `normalizePath`.
        struct Name: Equatable {
            var scheme: String
            var host: [UInt8]
            var port: [UInt8]?
            var path: String
        }
        var name: Name
        /// Where the authority starts and ends in the URI's bytes.
        var authority: Range<Int>
        /// The port's ":" when the port is written empty or as the default exactly (RFC 3986
        /// §6.2.3: then it is left out in normal form).
        var defaultPortColon: Int?
        var hasPort: Bool
    }

    /// `a` and `b` each as a claim and as the request URI (through `normalizePath`, the
    /// router's path normalization where the gateway calls this; nil: paths as written):
    /// - what `HTU` accepts is an absolute http(s) URI with a valid authority (RFC 3986 §3.2:
    ///   a non-empty host, reg-name or IP literal, and digits for a port);
    /// - its normal form is its own normal form, as a claim and as a request URI;
    /// - the scheme's and host's case and the default port do not change it (RFC 3986 §6.2.2.1,
    ///   §6.2.3), and only whole URIs are refused: a variant of a refused URI is refused too;
    /// - two URIs compare equal only if they name the same resource;
    /// - the comparison is symmetric: `a` as the claim for request `b` passes exactly when `b`
    ///   as the claim for request `a` does.
    public static func htu(_ a: String, _ b: String, normalizePath: ((String) -> String?)? = nil) {
        let na = htuForm(a, normalizePath)
        let nb = htuForm(b, normalizePath)
        if let na, let nb, na == nb {
            fuzzInvariant(
                resource(a, normalizePath)?.name == resource(b, normalizePath)?.name,
                "htu: two URIs that name different resources compare equal")
        }
        fuzzInvariant(
            dpopMatch(claim: a, request: b, normalizePath) == dpopMatch(claim: b, request: a, normalizePath),
            "htu: the comparison is not symmetric")
    }

    /// `HTU.normalize` of `uri` as a claim, with the checks on that one URI.
    private static func htuForm(_ uri: String, _ normalizePath: ((String) -> String?)?) -> String? {
        let n = HTU.normalize(uri, normalizePath: normalizePath)
        let parsed = resource(uri, normalizePath)
        if let n {
            fuzzInvariant(parsed != nil, "htu: accepted a URI that is not an absolute http(s) URI")
            fuzzInvariant(HTU.normalize(n, normalizePath: normalizePath) == n, "htu: the normal form is not normal")
            fuzzInvariant(HTU.normalize(requestURI: n) == n, "htu: the normal form differs as a request URI")
        }
        if let parsed {
            for variant in variants(uri, parsed) {
                fuzzInvariant(
                    HTU.normalize(variant, normalizePath: normalizePath) == n,
                    "htu: case or default port changes the comparison")
            }
        }
        return n
    }

    /// The check the verifier makes: the request URI (its path through `normalizePath` first,
    /// as the gateway builds it from the router's normalized path) against the claim.
    private static func dpopMatch(claim: String, request: String, _ normalizePath: ((String) -> String?)?) -> Bool {
        guard !request.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }),
            let r = resource(request, normalizePath), let want = HTU.normalize(requestURI: rebuilt(request, r)),
            let got = HTU.normalize(claim, normalizePath: normalizePath)
        else { return false }
        return want == got
    }

    /// `uri` with its path replaced by the resource's (normalized) path.
    private static func rebuilt(_ uri: String, _ r: Resource) -> String {
        String(decoding: Array(uri.utf8)[..<r.authority.upperBound], as: UTF8.self) + r.name.path
    }

    /// The same URI with the scheme and host in other cases, and the default port added or
    /// removed: every one names the same resource.
    private static func variants(_ uri: String, _ r: Resource) -> [String] {
        let bytes = Array(uri.utf8)
        let a = r.authority
        let upper = bytes.enumerated().map { i, c in
            i < a.upperBound && c >= 0x61 && c <= 0x7A ? c & ~0x20 : c
        }
        let lower = bytes.enumerated().map { i, c in
            i < a.upperBound && c >= 0x41 && c <= 0x5A ? c | 0x20 : c
        }
        var out = [upper, lower]
        let defaultPort = Array((r.name.scheme == "https" ? ":443" : ":80").utf8)
        if let colon = r.defaultPortColon {
            out.append(Array(bytes[..<colon] + bytes[a.upperBound...]))
        } else if !r.hasPort {
            out.append(Array(bytes[..<a.upperBound] + defaultPort + bytes[a.upperBound...]))
        }
        return out.map { String(decoding: $0, as: UTF8.self) }
    }

    /// RFC 3986 §3 for `http(s)://authority[/path]`, no query or fragment; nil otherwise, or
    /// when `normalizePath` refuses the path.
    static func resource(_ uri: String, _ normalizePath: ((String) -> String?)?) -> Resource? {
        let bytes = Array(uri.utf8)
        let lower = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let scheme: String
        if lower.starts(with: Array("https://".utf8)) {
            scheme = "https"
        } else if lower.starts(with: Array("http://".utf8)) {
            scheme = "http"
        } else {
            return nil
        }
        let start = scheme.utf8.count + 3
        guard bytes.count > start, !bytes.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) else {
            return nil
        }
        let end = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.count
        var hostEnd = end
        var colon: Int?
        if lower[start] == UInt8(ascii: "[") {
            guard let close = lower[start..<end].firstIndex(of: UInt8(ascii: "]")), close > start + 1,
                lower[(start + 1)..<close].allSatisfy({
                    isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
                })
            else { return nil }
            hostEnd = close + 1
            if hostEnd < end {
                guard lower[hostEnd] == UInt8(ascii: ":") else { return nil }
                colon = hostEnd
            }
        } else {
            colon = lower[start..<end].firstIndex(of: UInt8(ascii: ":"))
            hostEnd = colon ?? end
            guard hostEnd > start, lower[start..<hostEnd].allSatisfy(isRegNameByte) else { return nil }
        }
        var port: [UInt8]?
        var defaultPortColon: Int?
        if let colon {
            let digits = lower[(colon + 1)..<end]
            guard digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            let defaultPort = Array((scheme == "https" ? "443" : "80").utf8)
            let significant = Array(digits.drop { $0 == UInt8(ascii: "0") })
            port = digits.isEmpty || significant == defaultPort ? nil : significant
            if digits.isEmpty || digits.elementsEqual(defaultPort) { defaultPortColon = colon }
        }
        var path = end == bytes.count ? "/" : String(decoding: bytes[end...], as: UTF8.self)
        if let normalizePath {
            guard let p = normalizePath(path) else { return nil }
            path = p
        }
        return Resource(
            name: .init(scheme: scheme, host: Array(lower[start..<hostEnd]), port: port, path: path),
            authority: start..<end, defaultPortColon: defaultPortColon, hasPort: colon != nil)
    }

    private static func isHexDigit(_ c: UInt8) -> Bool { hexValue(c) != nil }

    /// RFC 3986 §3.2.2 reg-name: unreserved / pct-encoded / sub-delims (an IPv4 address is one).
    private static func isRegNameByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "-._~%!$&'()*+,;=".utf8.contains(c)
        }
    }
}
