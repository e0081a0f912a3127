/// How Redis is deployed, as one configuration URL names it: one server (plain or TLS), a
/// master found through Redis Sentinel, or a Redis Cluster. `Redis(loop:deployment:)` makes
/// the client for each.
public enum RedisDeployment: Sendable, Equatable {
    /// One server: `redis://…` or `rediss://…` (see `RedisEndpoint(url:)`).
    case standalone(RedisEndpoint)
    /// A master whose address the Sentinels know: `redis+sentinel://…`.
    case sentinel(RedisSentinelSettings)
    /// A Redis Cluster reached through seed nodes: `redis+cluster://…`.
    case cluster(RedisClusterSettings)

    /// Parses every scheme:
    /// - `redis://` and `rediss://` as `RedisEndpoint(url:)` does;
    /// - `redis+sentinel://[[user]:password@]host1[:port1],host2[:port2]…/MASTERNAME[/db]`
    ///   with optional `?sentinel_password=…`: user and password log in to the master, the
    ///   Sentinel password (if any) to the Sentinels; ports default to 26379;
    /// - `redis+cluster://[[user]:password@]host1[:port1],host2[:port2]…`: seed nodes (ports
    ///   default to 6379), no database (a cluster has only database 0) and no query.
    ///
    /// Returns nil for any other scheme or a malformed URL (see `RedisURL`); TLS to Sentinels
    /// or cluster nodes is not supported yet, so `rediss+sentinel` and `rediss+cluster` are
    /// refused rather than silently sent in clear.
    public init?(url: String) {
        guard let parsed = RedisURL(url) else { return nil }
        switch parsed.scheme {
        case "redis", "rediss":
            guard let endpoint = RedisEndpoint(url: url) else { return nil }
            self = .standalone(endpoint)
        case "redis+sentinel":
            guard let settings = RedisSentinelSettings(parsed) else { return nil }
            self = .sentinel(settings)
        case "redis+cluster":
            guard let settings = RedisClusterSettings(parsed) else { return nil }
            self = .cluster(settings)
        default:
            return nil
        }
    }
}

extension RedisDeployment: CustomStringConvertible {
    /// The deployment as a URL with every password masked, safe for logs.
    public var description: String {
        switch self {
        case .standalone(let endpoint): return endpoint.description
        case .sentinel(let settings): return settings.description
        case .cluster(let settings): return settings.description
        }
    }
}
