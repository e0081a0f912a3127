/// A master found through Redis Sentinel: which Sentinels to ask, the master's name there,
/// and how to log in to the master.
public struct RedisSentinelSettings: Sendable, Equatable, CustomStringConvertible {
    /// The Sentinels, asked in turn (each with the Sentinel password, database 0).
    public var sentinels: [RedisEndpoint]
    /// The name the Sentinels monitor the master under (`sentinel monitor NAME …`).
    public var masterName: String
    /// The ACL user on the master; nil logs in as `default`.
    public var username: String?
    /// The master's password; nil sends no `AUTH`.
    public var password: String?
    /// The logical database on the master.
    public var database: Int

    /// The Sentinels as given (their own password, if any, in each endpoint) and the master's
    /// name, login and database.
    public init(
        sentinels: [RedisEndpoint], masterName: String, username: String? = nil, password: String? = nil,
        database: Int = 0
    ) {
        self.sentinels = sentinels
        self.masterName = masterName
        self.username = username
        self.password = password
        self.database = database
    }

    /// The settings of a parsed `redis+sentinel://` URL (see `RedisDeployment(url:)`).
    init?(_ url: RedisURL) {
        guard !url.hasQueryKeys(outside: ["sentinel_password"]), let path = url.path else { return nil }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(segments.count), let name = segments.first, !name.isEmpty,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }),
            let database = RedisURL.database(segments.count == 2 ? segments[1] : "")
        else { return nil }
        let sentinelPassword = url.value("sentinel_password")
        if sentinelPassword?.isEmpty == true { return nil }
        let sentinels = url.hosts.map {
            RedisEndpoint(host: $0.host, port: $0.port ?? 26379, password: sentinelPassword)
        }
        self.init(
            sentinels: sentinels, masterName: String(name), username: url.username, password: url.password,
            database: database)
    }

    /// The master (or a candidate) at `host:port` with this login and database.
    func master(host: String, port: UInt16) -> RedisEndpoint {
        RedisEndpoint(host: host, port: port, username: username, password: password, database: database)
    }

    /// The settings as a URL with the passwords masked.
    public var description: String {
        let login = password == nil ? "" : "\(username ?? ""):***@"
        let hosts = sentinels.map(\.address).joined(separator: ",")
        let query = sentinels.contains { $0.password != nil } ? "?sentinel_password=***" : ""
        return "redis+sentinel://\(login)\(hosts)/\(masterName)/\(database)\(query)"
    }
}
