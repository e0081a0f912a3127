/// The `htu` comparison of RFC 9449 §4.3 check 9: the claim names the request's target URI
/// without query and fragment (§4.2), compared after syntax-based normalization (RFC 3986
/// §6.2.2): scheme and host lowercased, the scheme's default port dropped, an empty path as
/// "/", and the path put through the same normalization the router applied to the request.
public enum HTU {
    /// The comparison form of an `htu` claim, or nil if it is not an absolute http(s) URI
    /// without query, fragment and user information.
    /// - normalizePath: the router's path normalization (dot-segments, percent-encoding);
    ///   nil means the path is compared as written.
    public static func normalize(_ uri: String, normalizePath: ((String) -> String?)? = nil) -> String? {
        // §4.2: "without query and fragment parts" — a claim that has them is not an htu.
        if uri.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { return nil }
        guard let sep = uri.firstRange(of: "://") else { return nil }
        let scheme = uri[..<sep.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = uri[sep.upperBound...]
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash].lowercased()
        if authority.isEmpty || authority.contains("@") { return nil }
        if (scheme == "https" && authority.hasSuffix(":443")) || (scheme == "http" && authority.hasSuffix(":80")) {
            authority = String(authority.dropLast(scheme == "https" ? 4 : 3))
        }
        var path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        if let normalizePath {
            guard let p = normalizePath(path) else { return nil }
            path = p
        }
        return "\(scheme)://\(authority)\(path)"
    }

    /// The comparison form of the URI a request was sent to: its query and fragment are
    /// ignored (§4.3 check 9), the rest normalized as for the claim.
    public static func normalize(requestURI uri: String) -> String? {
        let cut = uri.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? uri.endIndex
        return normalize(String(uri[..<cut]))
    }
}
