/// Where a Redis server is and how to reach and log in to it: the address, TLS or not, the
/// ACL user and password (`AUTH`), and the logical database (`SELECT`) every connection
/// starts with.
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
    /// TLS (`rediss://`) and how the server is checked; nil for plain TCP.
    public var tls: RedisTLS?

    public init(
        host: String, port: UInt16 = 6379, username: String? = nil, password: String? = nil,
        database: Int = 0, tls: RedisTLS? = nil
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses one server's URL: `redis://[[username]:password@]host[:port][/db]`, or
    /// `rediss://…` (TLS) with the same parts and optionally
    /// `?ca_file=/path&server_name=name&insecure_skip_verify=true` (see `RedisTLS`). User and
    /// password percent-decoded, an IPv6 host in brackets, port 1–65535 (default 6379), db a
    /// decimal number (default 0). Returns nil for anything else: another scheme (Sentinel
    /// and Cluster URLs name several servers: `RedisDeployment(url:)`), several hosts, a
    /// query on `redis://` or an unknown query key, a fragment, a user without a password,
    /// an empty host or password, a malformed escape.
    public init?(url: String) {
        guard let parsed = RedisURL(url), parsed.hosts.count == 1 else { return nil }
        var tls: RedisTLS?
        switch parsed.scheme {
        case "redis":
            guard parsed.query.isEmpty else { return nil }
        case "rediss":
            guard !parsed.hasQueryKeys(outside: RedisTLS.queryKeys), let options = RedisTLS(query: parsed) else {
                return nil
            }
            tls = options
        default:
            return nil
        }
        guard let database = RedisURL.database(parsed.path ?? "") else { return nil }
        self.init(
            host: parsed.hosts[0].host, port: parsed.hosts[0].port ?? 6379, username: parsed.username,
            password: parsed.password, database: database, tls: tls)
    }

    /// `host:port` for messages, IPv6 in brackets; never the password.
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension RedisEndpoint: CustomStringConvertible {
    /// The endpoint as a URL with the password masked, safe for logs.
    public var description: String {
        let login = password == nil ? "" : "\(username ?? ""):***@"
        return "\(tls == nil ? "redis" : "rediss")://\(login)\(address)/\(database)\(tls?.queryText ?? "")"
    }
}
