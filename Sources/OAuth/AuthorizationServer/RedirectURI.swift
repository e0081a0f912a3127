/// A redirect URI a client may register (RFC 6749 §3.1.2, RFC 8252 §7, RFC 9700 §4.1.1): an
/// `https` URL; an `http` URL on a loopback host only (127.0.0.1, [::1] or `localhost`); or a
/// native app's private-use scheme named after a domain it owns (`com.example.app:/cb`). Never
/// a fragment, user information, or a scheme a browser itself runs.
///
/// Matched exactly, as a string (RFC 9700 §4.1.1: no pattern, no prefix), except that a
/// loopback `http` redirect matches on any port (RFC 8252 §7.3: the port is chosen when the
/// app starts).
public struct RedirectURI: Sendable, Equatable {
    public let text: String
    /// Loopback http: where the port sits in `text`, so two can be compared without it.
    let withoutPort: String?

    public static let maxLength = 2048

    public enum Refusal: String, Error, Sendable {
        case tooLong = "a redirect_uri is longer than 2048 characters"
        case notASCII = "a redirect_uri has characters outside printable ASCII"
        case fragment = "a redirect_uri has a fragment"
        case userinfo = "a redirect_uri has user information"
        case plainHTTP = "a redirect_uri is http on a host that is not loopback"
        case scheme = "a redirect_uri's scheme is not https, loopback http or an app's own (reverse domain)"
        case noHost = "a redirect_uri has no host"
        case characters = "a redirect_uri has characters a URI's host, port or path cannot hold"
    }

    /// Schemes a browser or the system handles itself: never an app's redirect.
    static let forbiddenSchemes: Set<String> = [
        "javascript", "data", "file", "blob", "about", "vbscript", "ftp", "ws", "wss", "filesystem"
    ]

    public init(_ text: String) throws(Refusal) {
        guard text.utf8.count <= Self.maxLength else { throw .tooLong }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { throw .notASCII }
        if text.contains("#") { throw .fragment }
        guard let colon = text.firstIndex(of: ":") else { throw .scheme }
        let scheme = text[..<colon].lowercased()
        let rest = text[text.index(after: colon)...]
        switch scheme {
        case "https", "http":
            guard rest.hasPrefix("//") else { throw .noHost }
            let afterSlashes = rest.dropFirst(2)
            let end = afterSlashes.firstIndex { $0 == "/" || $0 == "?" } ?? afterSlashes.endIndex
            let authority = afterSlashes[..<end]
            if authority.contains("@") { throw .userinfo }
            let host = Self.host(of: authority)
            guard !host.isEmpty else { throw .noHost }
            let bracketed = authority.hasPrefix("[")
            guard bracketed ? URIText.isIPv6(Substring(host)) : URIText.isHostName(Substring(host)),
                Self.portIsDigits(authority), URIText.isPathAndQuery(afterSlashes[end...])
            else { throw .characters }
            if scheme == "http" {
                guard Self.isLoopback(host) else { throw .plainHTTP }
                // The port (if any) is left out of the comparison form.
                // As written (scheme, host and all): only the port may differ (RFC 8252 §7.3),
                // nothing else, not even its case.
                let hostText: Substring
                if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                    hostText = authority[...close]
                } else {
                    hostText = authority.prefix { $0 != ":" }
                }
                withoutPort =
                    String(text[..<text.index(text.startIndex, offsetBy: 7)]) + hostText + afterSlashes[end...]
            } else {
                withoutPort = nil
            }
        default:
            // RFC 8252 §7.1: a private-use scheme is a reverse domain name the app controls.
            guard !Self.forbiddenSchemes.contains(scheme), scheme.contains("."),
                scheme.utf8.allSatisfy({ c in
                    (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2e || c == 0x2d || c == 0x2b
                }), !rest.isEmpty
            else { throw .scheme }
            if rest.hasPrefix("//"), rest.dropFirst(2).prefix(while: { $0 != "/" }).contains("@") { throw .userinfo }
            withoutPort = nil
        }
        self.text = text
    }

    /// Whether a redirect_uri an authorization request names is this registered one.
    public func matches(_ requested: String) -> Bool {
        if requested == text { return true }
        guard let withoutPort, let other = try? RedirectURI(requested), let theirs = other.withoutPort else {
            return false
        }
        return theirs == withoutPort
    }

    public var isLoopback: Bool { withoutPort != nil }

    /// After the host, nothing or `:` and 1 to 5 digits.
    static func portIsDigits(_ authority: Substring) -> Bool {
        let afterHost: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            afterHost = authority[authority.index(after: close)...]
        } else {
            afterHost = authority.firstIndex(of: ":").map { authority[$0...] } ?? ""
        }
        guard !afterHost.isEmpty else { return true }
        let digits = afterHost.dropFirst()
        return afterHost.first == ":" && (1...5).contains(digits.count)
            && digits.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    static func host(of authority: Substring) -> String {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return "" }
            return String(authority[authority.index(after: authority.startIndex)..<close]).lowercased()
        }
        return String(authority.prefix { $0 != ":" }).lowercased()
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "127.0.0.1"
    }
}
