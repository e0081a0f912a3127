/// A `client_id` that is a URL naming the client's metadata document (OAuth Client ID
/// Metadata Document, draft-ietf-oauth-client-id-metadata-document §3): `https`, a host, a
/// path, and none of what lets one URL pass for another: no userinfo, no fragment, no dot
/// segments (raw or percent-encoded). A query is refused too (the draft discourages it, and no
/// MCP client uses one). Compared as written: the document's own `client_id` must be this
/// exact string.
public struct ClientIDURL: Sendable, Equatable {
    public let text: String
    /// Lowercased, without port or brackets.
    public let host: String
    public let port: Int
    public let path: String

    public static let maxLength = 2048

    public enum Refusal: String, Error, Sendable {
        case notHTTPS = "the client_id is not an https URL"
        case tooLong = "the client_id is longer than 2048 characters"
        case notASCII = "the client_id has characters outside printable ASCII"
        case userinfo = "the client_id has user information"
        case fragment = "the client_id has a fragment"
        case query = "the client_id has a query"
        case noHost = "the client_id has no host"
        case badPort = "the client_id's port is not a number from 1 to 65535"
        case noPath = "the client_id has no path"
        case dotSegment = "the client_id's path has a . or .. segment"
        case characters = "the client_id has characters a URI's host or path cannot hold"
    }

    /// Whether `clientID` is meant as a metadata document URL at all (any other `client_id`
    /// is a registered one, or unknown).
    public static func looksLikeURL(_ clientID: String) -> Bool {
        clientID.utf8.count > 8 && clientID.lowercased().hasPrefix("https://")
    }

    public init(_ text: String) throws(Refusal) {
        guard text.utf8.count <= Self.maxLength else { throw .tooLong }
        // Printable ASCII only: an IDN or a control byte is one host to one reader and
        // another to the next.
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { throw .notASCII }
        guard text.hasPrefix("https://") else { throw .notHTTPS }
        let rest = text.dropFirst("https://".count)
        if rest.contains("#") { throw .fragment }
        if rest.contains("?") { throw .query }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        if authority.contains("@") { throw .userinfo }
        let path = String(rest[slash...])
        var host = Substring(authority)
        var port = 443
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .noHost }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                    throw .badPort
                }
                port = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else {
                throw .badPort
            }
            port = p
        }
        guard !host.isEmpty else { throw .noHost }
        let bracketed = authority.hasPrefix("[")
        guard bracketed ? URIText.isIPv6(host) : URIText.isHostName(host) else { throw .characters }
        guard path.count > 1 else { throw .noPath }
        guard URIText.isPathAndQuery(Substring(path)) else { throw .characters }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            let s = segment.lowercased().replacing("%2e", with: ".")
            if s == "." || s == ".." { throw .dotSegment }
        }
        self.text = text
        self.host = host.lowercased()
        self.port = port
        self.path = path
    }

    /// Whether the host is `pattern`: a host name exactly, or `*.domain` for any name under
    /// `domain` (not `domain` itself). Case-insensitive.
    public func hostMatches(_ pattern: String) -> Bool {
        let p = pattern.lowercased()
        if p.hasPrefix("*.") {
            let domain = p.dropFirst(1)  // ".domain"
            return host.hasSuffix(domain) && host.count > domain.count
        }
        return host == p
    }
}
