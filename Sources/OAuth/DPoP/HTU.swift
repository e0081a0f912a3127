/// The `htu` comparison of RFC 9449 §4.3 check 9: the claim names the request's target URI
/// without query and fragment (§4.2), compared after syntax-based normalization (RFC 3986
/// §6.2.2): scheme and host lowercased, the scheme's default port dropped, an empty path as
/// "/", and the path put through the same normalization the router applied to the request.
/// Works on UTF-8 bytes: it runs twice on every DPoP request.
public enum HTU {
    /// The comparison form of an `htu` claim, or nil if it is not an absolute http(s) URI
    /// without query, fragment and user information.
    /// - normalizePath: the router's path normalization (dot-segments, percent-encoding);
    ///   nil means the path is compared as written.
    public static func normalize(_ uri: String, normalizePath: ((String) -> String?)? = nil) -> String? {
        let bytes = Array(uri.utf8)
        // §4.2: "without query and fragment parts" — a claim that has them is not an htu.
        if bytes.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { return nil }
        return normalize(bytes[...], normalizePath: normalizePath)
    }

    /// The comparison form of the URI a request was sent to: its query and fragment are
    /// ignored (§4.3 check 9), the rest normalized as for the claim.
    public static func normalize(requestURI uri: String) -> String? {
        let bytes = Array(uri.utf8)
        let cut = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) ?? bytes.endIndex
        return normalize(bytes[..<cut], normalizePath: nil)
    }

    private static func normalize(_ uri: ArraySlice<UInt8>, normalizePath: ((String) -> String?)?) -> String? {
        let http = Array("http://".utf8)
        let https = Array("https://".utf8)
        let secure: Bool
        if hasPrefixIgnoringCase(uri, https) {
            secure = true
        } else if hasPrefixIgnoringCase(uri, http) {
            secure = false
        } else {
            return nil
        }
        let rest = uri.dropFirst(secure ? https.count : http.count)
        let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        var authority = rest[..<slash].map { $0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0 }
        if authority.isEmpty || authority.contains(UInt8(ascii: "@")) { return nil }
        let defaultPort = Array((secure ? ":443" : ":80").utf8)
        if authority.count > defaultPort.count && authority.suffix(defaultPort.count).elementsEqual(defaultPort) {
            authority.removeLast(defaultPort.count)
        }
        var path = slash == rest.endIndex ? "/" : String(decoding: rest[slash...], as: UTF8.self)
        if let normalizePath {
            guard let p = normalizePath(path) else { return nil }
            path = p
        }
        return (secure ? "https://" : "http://") + String(decoding: authority, as: UTF8.self) + path
    }

    private static func hasPrefixIgnoringCase(_ s: ArraySlice<UInt8>, _ lowerPrefix: [UInt8]) -> Bool {
        s.count >= lowerPrefix.count
            && zip(s, lowerPrefix).allSatisfy { ($0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0) == $1 }
    }
}
