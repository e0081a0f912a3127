/// A Redis Cluster: seed nodes to load the slot map from, and how to log in to every node.
public struct RedisClusterSettings: Sendable, Equatable, CustomStringConvertible {
    /// Nodes to ask for the slot map when no node of the map answers.
    public var seeds: [RedisEndpoint]
    /// The ACL user on every node; nil logs in as `default`.
    public var username: String?
    /// Every node's password; nil sends no `AUTH`.
    public var password: String?

    /// Seeds by address (their login and database are replaced by the cluster's login and
    /// database 0) and the login of every node.
    public init(seeds: [RedisEndpoint], username: String? = nil, password: String? = nil) {
        self.seeds = seeds.map { RedisEndpoint(host: $0.host, port: $0.port, username: username, password: password) }
        self.username = username
        self.password = password
    }

    /// The settings of a parsed `redis+cluster://` URL (see `RedisDeployment(url:)`).
    init?(_ url: RedisURL) {
        guard url.query.isEmpty, url.path == nil || url.path == "" else { return nil }
        self.init(
            seeds: url.hosts.map { RedisEndpoint(host: $0.host, port: $0.port ?? 6379) },
            username: url.username, password: url.password)
    }

    /// The node at `host:port` with this login (database 0: the only one a cluster has).
    func node(host: String, port: UInt16) -> RedisEndpoint {
        RedisEndpoint(host: host, port: port, username: username, password: password)
    }

    /// The settings as a URL with the password masked.
    public var description: String {
        let login = password == nil ? "" : "\(username ?? ""):***@"
        return "redis+cluster://\(login)\(seeds.map(\.address).joined(separator: ","))"
    }
}
