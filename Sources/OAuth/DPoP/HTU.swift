/// The `htu` comparison of RFC 9449 §4.3 check 9: the claim names the request's target URI
/// without query and fragment (§4.2), compared after syntax-based normalization (RFC 3986
/// §6.2.2): scheme and host lowercased, the scheme's default port (or an empty one, §6.2.3)
/// dropped, an empty path as "/", and the path put through the same normalization the
/// router applied to the request. An authority that is not RFC 3986's `host [":" port]` is
/// no URI to compare.
/// Works on the strings' UTF-8 buffers, building one string: it runs twice on every DPoP request.
public enum HTU {
    /// The comparison form of an `htu` claim, or nil if it is not an absolute http(s) URI
    /// with a valid authority (a host, an optional port; no user information) and without
    /// query and fragment.
    /// - normalizePath: the router's path normalization (dot-segments, percent-encoding);
    ///   nil means the path is compared as written.
    public static func normalize(_ uri: String, normalizePath: ((String) -> String?)? = nil) -> String? {
        var uri = uri
        return uri.withUTF8 { bytes in
            // §4.2: "without query and fragment parts" — a claim that has them is not an htu.
            if bytes.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { return nil }
            return normalize(bytes, normalizePath: normalizePath)
        }
    }

    /// The comparison form of the URI a request was sent to: its query and fragment are
    /// ignored (§4.3 check 9), the rest normalized as for the claim.
    public static func normalize(requestURI uri: String) -> String? {
        var uri = uri
        return uri.withUTF8 { bytes in
            let cut = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) ?? bytes.count
            return normalize(UnsafeBufferPointer(rebasing: bytes[..<cut]), normalizePath: nil)
        }
    }

    private static let http: StaticString = "http://"
    private static let https: StaticString = "https://"

    private static func normalize(_ uri: UnsafeBufferPointer<UInt8>, normalizePath: ((String) -> String?)?)
        -> String?
    {
        let secure: Bool
        if hasPrefixIgnoringCase(uri, https) {
            secure = true
        } else if hasPrefixIgnoringCase(uri, http) {
            secure = false
        } else {
            return nil
        }
        let scheme = secure ? https : http
        let authorityStart = scheme.utf8CodeUnitCount
        let pathStart = uri[authorityStart...].firstIndex(of: UInt8(ascii: "/")) ?? uri.count
        guard let hostEnd = hostEnd(uri, from: authorityStart, to: pathStart) else { return nil }
        // RFC 3986 §6.2.3: an empty port, or the scheme's default, is left out.
        var authorityEnd = pathStart
        if hostEnd < pathStart {
            let port = uri[(hostEnd + 1)..<pathStart]
            if port.isEmpty || port.elementsEqual((secure ? "443" : "80").utf8) { authorityEnd = hostEnd }
        }
        var normalizedPath: String?
        if let normalizePath {
            let path = pathStart == uri.count ? "/" : String(decoding: uri[pathStart...], as: UTF8.self)
            guard let p = normalizePath(path) else { return nil }
            normalizedPath = p
        }
        let authorityLength = authorityEnd - authorityStart
        let pathLength = normalizedPath?.utf8.count ?? max(1, uri.count - pathStart)
        return String(unsafeUninitializedCapacity: authorityStart + authorityLength + pathLength) { out in
            var i = 0
            for c in UnsafeBufferPointer(start: scheme.utf8Start, count: authorityStart) {
                out[i] = c
                i += 1
            }
            for c in uri[authorityStart..<authorityEnd] {
                out[i] = c >= 0x41 && c <= 0x5a ? c | 0x20 : c
                i += 1
            }
            if let normalizedPath {
                for c in normalizedPath.utf8 {
                    out[i] = c
                    i += 1
                }
            } else if pathStart == uri.count {
                out[i] = UInt8(ascii: "/")
                i += 1
            } else {
                for c in uri[pathStart...] {
                    out[i] = c
                    i += 1
                }
            }
            return i
        }
    }

    /// Where the host of the authority `uri[start..<end]` ends (at its port's ":" or at
    /// `end`); nil unless the authority is RFC 3986 §3.2's `host [":" port]` with a non-empty
    /// host (RFC 9110 §4.2.1): an IP literal of hex digits, ":" and ".", or a reg-name of
    /// unreserved characters, sub-delims and escapes; a port of digits. So no userinfo, and
    /// nothing that only looks like a port ("h:443:443").
    private static func hostEnd(_ uri: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int? {
        guard start < end else { return nil }
        var i = start
        if uri[i] == UInt8(ascii: "[") {
            i += 1
            while i < end && uri[i] != UInt8(ascii: "]") {
                guard isHexDigit(uri[i]) || uri[i] == UInt8(ascii: ":") || uri[i] == UInt8(ascii: ".") else {
                    return nil
                }
                i += 1
            }
            guard i < end, i > start + 1 else { return nil }
            i += 1
        } else {
            while i < end && uri[i] != UInt8(ascii: ":") {
                if uri[i] == UInt8(ascii: "%") {
                    guard i + 2 < end, isHexDigit(uri[i + 1]), isHexDigit(uri[i + 2]) else { return nil }
                    i += 3
                    continue
                }
                guard isRegNameByte(uri[i]) else { return nil }
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i == end || uri[i] == UInt8(ascii: ":") else { return nil }
        guard uri[min(i + 1, end)..<end].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return i
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }

    /// RFC 3986 §3.2.2 reg-name bytes besides escapes: unreserved / sub-delims.
    private static func isRegNameByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","),
            UInt8(ascii: ";"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    private static func hasPrefixIgnoringCase(_ s: UnsafeBufferPointer<UInt8>, _ lowerPrefix: StaticString) -> Bool {
        let n = lowerPrefix.utf8CodeUnitCount
        guard s.count >= n else { return false }
        let prefix = UnsafeBufferPointer(start: lowerPrefix.utf8Start, count: n)
        for i in 0..<n {
            let c: UInt8 = s[i] >= 0x41 && s[i] <= 0x5a ? s[i] | 0x20 : s[i]
            if c != prefix[i] { return false }
        }
        return true
    }
}
