public import JOSE

/// A protected resource's identifier (RFC 8707 §2, RFC 9728 §1.2): "a URL that uses the
/// https scheme and has no fragment component". What a route's `resource` names, what a
/// token's `aud` must contain for it, and where its Protected Resource Metadata lives (§3.1).
///
/// Stricter than the RFCs where the gateway needs it: plain `http` only for a loopback host
/// (a development setup, never a deployed one); no userinfo; no query (RFC 8707 §2 "SHOULD
/// NOT", and the gateway serves the metadata by path alone); a path without dot-segments or
/// empty segments, so the metadata path derived from it is the one a request names.
public struct ResourceIdentifier: Sendable, Equatable {
    /// The identifier exactly as written: what `aud` is compared with (RFC 7519 §4.1.3, a
    /// case-sensitive string comparison) and the metadata's `resource` (RFC 9728 §3.3).
    public let uri: String
    /// `https`, or `http` for a loopback host.
    public let scheme: String
    /// host[:port] as written.
    public let authority: String
    /// "" or a path starting with "/", as written.
    public let path: String

    /// Why a text is not a resource identifier the gateway accepts.
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        case notAbsolute
        case notHTTPS
        case httpNotLoopback
        case fragment
        case query
        case userinfo
        case host
        case port
        case path

        public var description: String {
            switch self {
            case .notAbsolute: "must be an absolute URL (https://host/path)"
            case .notHTTPS: "must use the https scheme (RFC 9728 §1.2)"
            case .httpNotLoopback: "may use http only with a loopback host (127.0.0.1, [::1], localhost)"
            case .fragment: "must not have a fragment (RFC 8707 §2)"
            case .query: "must not have a query (RFC 8707 §2; the metadata is served by path)"
            case .userinfo: "must not carry userinfo (user@)"
            case .host: "has no valid host"
            case .port: "has an invalid port"
            case .path:
                "has a path with characters, percent-encodings, dot-segments or empty segments the gateway does not serve"
            }
        }
    }

    /// The well-known URI suffix RFC 9728 §3 registers.
    public static let wellKnownPrefix = "/.well-known/oauth-protected-resource"

    public static func parse(_ text: String) -> Result<ResourceIdentifier, Problem> {
        let bytes = Array(text.utf8)
        // Nothing outside printable ASCII, and no space: a URI has neither (RFC 3986 §2).
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return .failure(.notAbsolute) }
        if bytes.contains(UInt8(ascii: "#")) { return .failure(.fragment) }
        let scheme: String
        if text.hasPrefix("https://") {
            scheme = "https"
        } else if text.hasPrefix("http://") {
            scheme = "http"
        } else {
            return .failure(text.contains("://") ? .notHTTPS : .notAbsolute)
        }
        if bytes.contains(UInt8(ascii: "?")) { return .failure(.query) }
        let rest = text.dropFirst(scheme.count + 3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash])
        let path = String(rest[slash...])
        if authority.isEmpty { return .failure(.notAbsolute) }
        if authority.contains("@") { return .failure(.userinfo) }
        guard let host = Self.host(of: authority) else { return .failure(.host) }
        if host.port == .invalid { return .failure(.port) }
        if scheme == "http" && !["127.0.0.1", "[::1]", "localhost"].contains(host.name.lowercased()) {
            return .failure(.httpNotLoopback)
        }
        guard Self.isServablePath(path) else { return .failure(.path) }
        return .success(ResourceIdentifier(uri: text, scheme: scheme, authority: authority, path: path))
    }

    /// RFC 9728 §3.1: the well-known suffix inserted between the host and the path; "any
    /// terminating slash (/) following the host component MUST be removed".
    public var metadataPath: String { Self.wellKnownPrefix + (path == "/" ? "" : path) }

    /// The absolute URL of the metadata: what a 401's `resource_metadata` names (§5.1).
    public var metadataURL: String { "\(scheme)://\(authority)\(metadataPath)" }

    /// RFC 8707 §2 / RFC 7519 §4.1.3: whether the claims' `aud` (a string, or an array of
    /// strings) contains this resource, compared as exact strings.
    public func isAudience(of claims: JSONObject) -> Bool {
        switch claims[Self.aud] {
        case .string(let s): s == uri
        case .array(let values): values.contains { $0.string == uri }
        default: false
        }
    }

    private static let aud = JSONObject.Name("aud")

    private enum Port: Equatable { case none, valid, invalid }

    /// The host of `authority` (an IPv6 literal keeps its brackets) and whether its port is good.
    private static func host(of authority: String) -> (name: String, port: Port)? {
        var name: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            name = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
            let inner = name.dropFirst().dropLast()
            guard !inner.isEmpty, inner.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            name = parts[0]
            if parts.count == 2 { portText = parts[1] }
            guard !name.isEmpty, !name.hasPrefix("."), !name.hasPrefix("-"),
                name.utf8.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
            else { return nil }
        }
        guard let portText else { return (String(name), .none) }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy(isDigit), let n = Int(portText),
            n > 0, n <= 65535
        else { return (String(name), .invalid) }
        return (String(name), .valid)
    }

    /// "" or "/" segments of RFC 3986 §3.3 pchar (unreserved, sub-delims but ";", ":", "@"),
    /// no "%" (a percent-encoding would be decoded before the gateway compares paths), no
    /// empty, "." or ".." segment except one trailing slash.
    private static func isServablePath(_ path: String) -> Bool {
        if path.isEmpty || path == "/" { return true }
        guard path.hasPrefix("/") else { return false }
        let allowed = Set("-._~!$&'()*+,=:@/".utf8)
        guard path.utf8.allSatisfy({ isAlphanumeric($0) || allowed.contains($0) }) else { return false }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        for (i, segment) in segments.enumerated() {
            if segment == "." || segment == ".." { return false }
            if segment.isEmpty && i != segments.count - 1 { return false }
        }
        return true
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        isDigit(b) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
    }
}
