import Foundation

/// The parts every Redis URL scheme shares, split and checked once:
/// `scheme://[[user]:password@]host[:port][,host[:port]…][/path][?key=value&…]`.
/// What each scheme allows (one host or several, which path, which query keys) is decided by
/// `RedisEndpoint(url:)` and `RedisDeployment(url:)`; this only refuses what no scheme allows.
struct RedisURL {
    /// Lower-cased, without `://`.
    let scheme: String
    let username: String?
    let password: String?
    /// At least one; the port is nil where the URL gives none.
    let hosts: [(host: String, port: UInt16?)]
    /// Everything after the first `/` that follows the hosts (not decoded); nil without a `/`.
    let path: Substring?
    /// Percent-decoded, in URL order, no key twice.
    let query: [(key: String, value: String)]

    /// Nil for a URL without `://`, with a fragment, a user without a password, an empty
    /// host or password, a malformed escape or query, or a key given twice.
    init?(_ url: String) {
        guard let separator = url.range(of: "://") else { return nil }
        scheme = url[..<separator.lowerBound].lowercased()
        var rest = url[separator.upperBound...]
        guard !scheme.isEmpty, !rest.contains("#") else { return nil }

        var query: [(key: String, value: String)] = []
        if let mark = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false) {
                guard let equals = pair.firstIndex(of: "="),
                    let key = pair[..<equals].removingPercentEncoding, !key.isEmpty,
                    let value = pair[pair.index(after: equals)...].removingPercentEncoding,
                    !query.contains(where: { $0.key == key })
                else { return nil }
                query.append((key, value))
            }
            rest = rest[..<mark]
        }
        self.query = query

        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        } else {
            path = nil
        }

        // The last `@`: a password may contain an unescaped `@`, a host never does.
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            guard let colon = userinfo.firstIndex(of: ":"),
                let user = userinfo[..<colon].removingPercentEncoding,
                let pass = userinfo[userinfo.index(after: colon)...].removingPercentEncoding,
                !pass.isEmpty
            else { return nil }
            username = user.isEmpty ? nil : user
            password = pass
            rest = rest[rest.index(after: at)...]
        } else {
            username = nil
            password = nil
        }

        var hosts: [(host: String, port: UInt16?)] = []
        for authority in rest.split(separator: ",", omittingEmptySubsequences: false) {
            guard let hostAndPort = RedisURL.hostAndPort(authority) else { return nil }
            hosts.append(hostAndPort)
        }
        self.hosts = hosts
    }

    /// The query value of `key`, if given.
    func value(_ key: String) -> String? { query.first { $0.key == key }?.value }

    /// Whether the query has keys other than `allowed`.
    func hasQueryKeys(outside allowed: Set<String>) -> Bool { query.contains { !allowed.contains($0.key) } }

    /// A database number path (`""` or `"3"`): nil when it is not one.
    static func database(_ text: Substring) -> Int? {
        if text.isEmpty { return 0 }
        guard let db = decimal(text), db <= Int(Int32.max) else { return nil }
        return db
    }

    /// Digits only (no sign, no spaces), at most 10 of them.
    static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 10, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    private static func hostAndPort(_ authority: Substring) -> (host: String, port: UInt16?)? {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            guard host.contains(":"), host.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == ":" || $0 == ".") })
            else { return nil }
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            let allowed: (Character) -> Bool = {
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_")
            }
            guard host.allSatisfy(allowed) else { return nil }
        }
        guard !host.isEmpty else { return nil }
        guard let portText else { return (String(host), nil) }
        guard let p = decimal(portText), p >= 1, p <= Int(UInt16.max) else { return nil }
        return (String(host), UInt16(p))
    }
}
