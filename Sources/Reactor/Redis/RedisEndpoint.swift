import Foundation

/// Where a Redis server is and how to log in to it: the address, the ACL user and password
/// (`AUTH`), and the logical database (`SELECT`) every connection starts with.
public struct RedisEndpoint: Sendable, Equatable {
    /// A host name, an IPv4 address, or an IPv6 address without brackets.
    public var host: String
    public var port: UInt16
    /// The ACL user (Redis 6+), sent with the password; nil logs in as `default`.
    public var username: String?
    /// Sent with `AUTH` after each connect; nil sends no `AUTH`.
    public var password: String?
    /// The logical database (`SELECT`) for every command of the client.
    public var database: Int

    public init(host: String, port: UInt16 = 6379, username: String? = nil, password: String? = nil,
                database: Int = 0) {
        self.host = host; self.port = port
        self.username = username; self.password = password
        self.database = database
    }

    /// Parses `redis://[[username]:password@]host[:port][/db]`: user and password
    /// percent-decoded, an IPv6 host in brackets, port 1–65535 (default 6379), db a decimal
    /// number (default 0). Returns nil for anything else: another scheme (`rediss`, `unix`,
    /// Sentinel are later work), a query or fragment, a user without a password, an empty
    /// host or password, a malformed escape.
    public init?(url: String) {
        let scheme = "redis://"
        guard url.count > scheme.count, url.prefix(scheme.count).lowercased() == scheme else { return nil }
        var rest = Substring(url.dropFirst(scheme.count))
        guard !rest.contains("?"), !rest.contains("#") else { return nil }

        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard let db = RedisEndpoint.decimal(path), db <= Int(Int32.max) else { return nil }
                database = db
            }
            rest = rest[..<slash]
        }

        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            guard let colon = userinfo.firstIndex(of: ":"),
                  let user = userinfo[..<colon].removingPercentEncoding,
                  let pass = userinfo[userinfo.index(after: colon)...].removingPercentEncoding,
                  !pass.isEmpty else { return nil }
            username = user.isEmpty ? nil : user
            password = pass
            rest = rest[rest.index(after: at)...]
        }

        guard let (host, port) = RedisEndpoint.hostAndPort(rest) else { return nil }
        self.init(host: host, port: port, username: username, password: password, database: database)
    }

    /// `host:port` for messages, IPv6 in brackets; never the password.
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func hostAndPort(_ authority: Substring) -> (String, UInt16)? {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            guard host.contains(":"), host.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == ":" || $0 == ".") }) else { return nil }
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
            let allowed: (Character) -> Bool = { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }
            guard host.allSatisfy(allowed) else { return nil }
        }
        guard !host.isEmpty else { return nil }
        var port: UInt16 = 6379
        if let portText {
            guard let p = decimal(portText), p >= 1, p <= Int(UInt16.max) else { return nil }
            port = UInt16(p)
        }
        return (String(host), port)
    }

    /// Digits only (no sign, no spaces), at most 10 of them.
    private static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 10, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }
}

extension RedisEndpoint: CustomStringConvertible {
    /// The endpoint as a URL with the password masked, safe for logs.
    public var description: String {
        let login = password == nil ? "" : "\(username ?? ""):***@"
        return "redis://\(login)\(address)/\(database)"
    }
}
