/// The `htu` comparison of RFC 9449 §4.3 check 9: the claim names the request's target URI
/// without query and fragment (§4.2), compared after syntax-based normalization (RFC 3986
/// §6.2.2): scheme and host lowercased, the scheme's default port dropped, an empty path as
/// "/", and the path put through the same normalization the router applied to the request.
/// Works on the strings' UTF-8 buffers, building one string: it runs twice on every DPoP request.
public enum HTU {
    /// The comparison form of an `htu` claim, or nil if it is not an absolute http(s) URI
    /// without query, fragment and user information.
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
        var authorityEnd = pathStart
        if authorityEnd == authorityStart || uri[authorityStart..<authorityEnd].contains(UInt8(ascii: "@")) {
            return nil
        }
        // The default port (digits and ":" are the same in any case).
        let defaultPort: StaticString = secure ? ":443" : ":80"
        let portLength = defaultPort.utf8CodeUnitCount
        if authorityEnd - authorityStart > portLength
            && uri[(authorityEnd - portLength)..<authorityEnd].elementsEqual(
                UnsafeBufferPointer(start: defaultPort.utf8Start, count: portLength))
        {
            authorityEnd -= portLength
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
