import Yams

/// A login route's clients: `client: NAME`, or `clients: [corp, partners]` — the browser then
/// chooses at /oauth2/start (or the link names `?client=`), and the session belongs to the
/// client it logged in with.
extension ConfigParser {
    /// The route's login clients (the first is `client`); problems reported on `r`.
    static func loginClients(_ d: RouteDraft, cfg: GatewayConfig, _ r: ConfigReader) -> [String] {
        guard let given = d.keys.clients else {
            let client = d.keys.client
            return loginClient(client?.node, path: client?.path ?? "\(d.path).client", item: d.item, cfg: cfg, r)
                .map { [$0] } ?? []
        }
        let n = given.node
        let p = given.path
        if d.keys.client != nil {
            r.problem(p, n, "give client: NAME or clients: [A, B], not both")
            return []
        }
        guard let seq = r.sequence(n, path: p) else { return [] }
        if seq.isEmpty {
            r.problem(
                p, n,
                "is empty; list the login clients (defined: \(cfg.clientNames.joined(separator: ", ")))")
        }
        var names: [String] = []
        for (j, item) in seq.enumerated() {
            let q = "\(p)[\(j)]"
            guard let name = r.string(item, path: q) else { continue }
            guard !names.contains(name) else {
                r.problem(q, item, "\"\(name)\" is listed twice")
                continue
            }
            guard cfg.clients[name] != nil else {
                r.problem(q, item, "\"\(name)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
                continue
            }
            // The checks of a single `client:` (issuer with discovery, a redirect URI).
            if let ok = loginClient(item, path: q, item: item, cfg: cfg, r) { names.append(ok) }
        }
        return names
    }
}

extension ConfigParser {
    /// `userinfo: true` does something only for a client that logs browsers in.
    static func checkUserinfoClients(_ cfg: GatewayConfig, _ r: ConfigReader) {
        let loginClients = cfg.browserLoginClients
        for client in cfg.clients.values.sorted(by: { $0.name < $1.name })
        where client.login.userinfo && !loginClients.contains(client.name) {
            r.problem(
                "clients.\(client.name).userinfo", nil,
                "has no effect: no auth: login route lists this client (add client: \(client.name) or clients: [..., \(client.name)] to a login route, or remove userinfo)"
            )
        }
    }
}
