import JOSE
import OAuth
import Reactor
import Yams

/// `store:`, `public_url:`, `dpop:` and a route's `dpop:` (RFC 9449).
extension ConfigParser {
    /// The Redis key prefix when `store.prefix` is left out.
    static let storePrefix = "tokengate:"

    static func store(_ node: Node, _ r: ConfigReader) -> StoreConfig {
        var url: String?
        var keys = StoreKeys()
        if case .scalar = node {
            url = r.string(node, path: "store")
        } else if let m = r.mapping(node, path: "store", section: .store) {
            StoreConfig.keyTable.read(m, into: &keys, path: "store", r)
            if keys.url == nil { r.problem("store", node, "needs url: memory or redis://host:6379/0") }
            url = keys.url?.value
        }
        guard let url else { return .memory }
        if url == "memory" { return .memory }
        guard RedisDeployment(url: url) != nil else {
            r.problem(
                "store", node,
                "must be memory, redis[s]://[[user]:password@]host[:port][/db][?ca_file=…&server_name=…], "
                    + "redis+sentinel://[[user]:password@]host:port[,host:port…]/MASTER[/db] or redis+cluster://host:port[,host:port…]"
            )
            return .memory
        }
        return .redis(url: url, prefix: keys.prefix)
    }

    static func publicURLs(_ node: Node, _ r: ConfigReader) -> [PublicURL] {
        if case .sequence = node, let seq = r.sequence(node, path: "public_url") {
            return seq.enumerated().compactMap { publicURL($1, path: "public_url[\($0)]", r) }
        }
        return publicURL(node, path: "public_url", r).map { [$0] } ?? []
    }

    static func publicURL(_ node: Node, path: String, _ r: ConfigReader) -> PublicURL? {
        guard let s = r.string(node, path: path) else { return nil }
        guard let u = ConfigValues.url(s), u.path.isEmpty else {
            r.problem(path, node, "\"\(s)\" must be an origin such as https://api.example.com (no path, query or user)")
            return nil
        }
        let bracketed = u.host.contains(":") ? "[\(u.host)]" : u.host
        let defaultPort: UInt16 = u.scheme == "https" ? 443 : 80
        return PublicURL(scheme: u.scheme, authority: u.port == defaultPort ? bracketed : "\(bracketed):\(u.port)")
    }

    static func dpopSettings(_ node: Node, _ r: ConfigReader) -> DPoPSettings {
        var d = DPoPSettings()
        guard let m = r.mapping(node, path: "dpop", section: .dpop) else { return d }
        DPoPSettings.keyTable.read(m, into: &d, path: "dpop", r)
        return d
    }

    static func dpopRoute(_ node: Node, path p: String, _ r: ConfigReader) -> DPoPRouteConfig {
        var d = DPoPRouteConfig()
        guard let m = r.mapping(node, path: p, section: .routeDPoP) else { return d }
        DPoPRouteConfig.keyTable.read(m, into: &d, path: p, r)
        return d
    }
}
