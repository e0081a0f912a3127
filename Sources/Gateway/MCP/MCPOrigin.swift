import Reactor

/// DNS rebinding (MCP transports, "Security Warning"; 2026-07-28: servers MUST validate a
/// present `Origin`): a page at `evil.example` whose name an attacker re-points at the
/// gateway's address reaches it with the victim browser's reach. The MCP server cannot check
/// this itself, since tokengate sends it the upstream's own authority as `Host`, so the MCP
/// route does: a request whose `Host` is not one the route is served at, or whose present
/// `Origin` is neither such a host nor listed in `allowed_origins`, is refused (403).
///
/// The route is served at its `match.host` and at the hosts of `public_url`; with neither,
/// the gateway cannot know its own name, and a present `Origin` must be the request's own
/// (its scheme and `Host`).
struct MCPOrigin: Sendable {
    /// The hosts the route is served at (normalized); empty: not known from the config.
    let hosts: [HostPattern]
    /// `allowed_origins`, each `scheme://host[:port]` in lower case.
    let allowedOrigins: [String]

    init(route: RouteConfig, publicURLs: [PublicURL], allowedOrigins: [String]) {
        var hosts: [HostPattern] = route.match.host.map { [$0] } ?? []
        for url in publicURLs {
            if let h = HostNormalizer.normalize(url.authority), let pattern = HostPattern(h) { hosts.append(pattern) }
        }
        self.hosts = hosts
        self.allowedOrigins = allowedOrigins
    }

    /// Why the request is refused; nil when it may go on. `host`: the request's `Host` (a
    /// trusted proxy's `X-Forwarded-Host` first); `origin`: its `Origin` field, if any.
    func refusal(host rawHost: String, scheme: String, origin: String?) -> String? {
        // Neither a host to hold the request to nor an Origin to check: nothing to normalize.
        if hosts.isEmpty && origin == nil { return nil }
        let host = HostNormalizer.normalize(rawHost)
        if !hosts.isEmpty {
            guard let host, hosts.contains(where: { $0.matches(host) }) else {
                return "the Host is not one this MCP endpoint is served at"
            }
        }
        guard let origin = origin?.trimmingOWS else { return nil }
        let lower = origin.lowercased()
        if allowedOrigins.contains(lower) { return nil }
        // RFC 6454 §7: scheme "://" host [ ":" port ]; "null" (an opaque origin) is no site.
        guard let sep = lower.range(of: "://"), ["http", "https"].contains(lower[..<sep.lowerBound]) else {
            return "the Origin is not this MCP endpoint's"
        }
        let authority = String(lower[sep.upperBound...])
        guard !authority.contains("/"), let originHost = HostNormalizer.normalize(authority) else {
            return "the Origin is not this MCP endpoint's"
        }
        if !hosts.isEmpty {
            return hosts.contains(where: { $0.matches(originHost) }) ? nil : "the Origin is not this MCP endpoint's"
        }
        let own = "\(scheme)://\(rawHost.lowercased())"
        return lower == own || (host != nil && originHost == host && lower.hasPrefix(scheme + "://"))
            ? nil : "the Origin is not this MCP endpoint's"
    }

    /// `allowed_origins`' entries: `http(s)://host[:port]`, nothing after.
    static func isOrigin(_ text: String) -> Bool {
        let lower = text.lowercased()
        guard let sep = lower.range(of: "://"), ["http", "https"].contains(lower[..<sep.lowerBound]) else {
            return false
        }
        let authority = String(lower[sep.upperBound...])
        return !authority.isEmpty && !authority.contains("/") && HostNormalizer.normalize(authority) != nil
    }
}
