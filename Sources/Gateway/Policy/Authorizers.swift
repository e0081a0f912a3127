import JOSE
import OAuth
import Yams

/// Policy decisions as a module: the `authorizers:` PDPs, the process's decision cache, each
/// worker's `PolicyDecisionPoints` with its counters and status rows, and `AuthorizeStage` on
/// the routes that name an authorizer (`authorize`).
enum Authorizers: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "authorizers", type: "mapping: an authorizer's name to its PDP (below)", defaultText: "none",
        defaultCheck: nil)
    static let sections = [ConfigSection.authorizer, .authorizerAuth, .authorizerCache, .authorizerSubject]
    static let unset: [String: AuthorizerConfig] = [:]
    static let stages: [any ModuleStage.Type] = [AuthorizeStage.self]

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: AuthorizerConfig] {
        ConfigParser.authorizers(node, cfg, r)
    }

    /// Routes' decisions, kept for the process and shared by its workers.
    static func makeShared(_ stores: StoreBackend) -> PolicyDecisionCache { PolicyDecisionCache() }

    static func makeService(_ shared: PolicyDecisionCache, _ context: ModuleContext) -> PolicyDecisionPoints {
        PolicyDecisionPoints(
            loop: context.loop, cache: shared, wallClock: context.wallClock, grantTokens: context.stores.grantTokens)
    }
}

extension PolicyDecisionPoints: ModuleService {
    func discovered(issuer: String, metadata: ProviderMetadata) {
        discovered(
            issuer: issuer, tokenEndpoint: metadata.tokenEndpoint, mtls: metadata.usingMTLSAliases().tokenEndpoint)
    }
}
extension AuthorizationMetrics: ModuleMetrics {}

/// Each authorizer's PDP as the workers see it, for the status page.
struct AuthorizerStatuses: ModuleStatus {
    var byName: [String: AuthorizerStatus] = [:]

    mutating func add(_ other: AuthorizerStatuses) { byName.merge(other.byName) { $0.adding($1) } }

    /// Each authorizer the config defines: its PDP, the endpoint in use and its decisions.
    func section(_ config: GatewayConfig) -> StatusSection? {
        let rows = config.authorizers.values.sorted { $0.name < $1.name }.map { a in
            (name: a.name, url: a.url, status: byName[a.name] ?? AuthorizerStatus(endpoint: a.evaluationURL))
        }
        let json = JSONValue.array(
            rows.map { a in
                let c = a.status.counts
                return .object(
                    JSONObject([
                        "name": .string(a.name), "url": .string(a.url), "endpoint": .string(a.status.endpoint),
                        "metadata": a.status.metadata.map(JSONValue.bool) ?? .null,
                        "decisions": .object(
                            JSONObject([
                                "allow": StatusReport.number(c.allow), "deny": StatusReport.number(c.deny),
                                "error": StatusReport.number(c.error), "cached": StatusReport.number(c.cached)
                            ]))
                    ]))
            })
        return StatusSection(name: "authorizers", json: json, html: rows.isEmpty ? "" : html(rows))
    }

    private func html(_ rows: [(name: String, url: String, status: AuthorizerStatus)]) -> String {
        let e = LoginPages.escape
        var out = "<h2>Authorizers (\(rows.count))</h2><table id=\"authorizers\"><tr><th>Name</th>"
        out +=
            "<th>Evaluation endpoint</th><th>Metadata</th><th>Allow</th><th>Deny</th><th>Error</th><th>Cached</th></tr>"
        for a in rows {
            let c = a.status.counts
            let meta = a.status.metadata.map { $0 ? "read" : "none" } ?? "not yet"
            out += "<tr><td>\(e(a.name))</td><td>\(e(a.status.endpoint))</td><td>\(meta)</td><td>\(c.allow)</td>"
            out +=
                "<td>\(c.deny)</td><td\(c.error > 0 ? " class=\"bad\"" : "")>\(c.error)</td><td>\(c.cached)</td></tr>"
        }
        return out + "</table>"
    }
}

extension ConfigSection {
    static let authorizer = ConfigSection("authorizers.NAME") { AuthorizerConfig.keyTable.docs }
    static let authorizerAuth = ConfigSection("authorizers.NAME.auth") { AuthorizerConfig.authKeyTable.docs }
    static let authorizerCache = ConfigSection("authorizers.NAME.cache") { AuthorizerConfig.cacheKeyTable.docs }
    static let authorizerSubject = ConfigSection("authorizers.NAME.subject") {
        AuthorizerConfig.subjectKeyTable.docs
    }
}

extension GatewayConfig {
    /// `authorizers:`: named policy decision points that routes ask (`authorize`).
    var authorizers: [String: AuthorizerConfig] { self[module: Authorizers.self] }
}

extension WorkerServices {
    /// This worker's PDP clients, over the process's decisions.
    var policies: PolicyDecisionPoints { modules[Authorizers.self] }
}

/// One authorizer's PDP (per worker, or added up): the evaluation endpoint in use, whether
/// its metadata named it, and the decisions made since start.
struct AuthorizerStatus: Sendable {
    var endpoint = ""
    /// nil: no worker has read the metadata yet; true: some worker uses endpoints it named.
    var metadata: Bool?
    var counts = AuthorizationMetrics.Counts()

    func adding(_ o: AuthorizerStatus) -> AuthorizerStatus {
        var c = counts
        c.add(o.counts)
        let read: Bool? =
            switch (metadata, o.metadata) {
            case (true, _), (_, true): true
            case (false, _), (_, false): false
            default: nil
            }
        return AuthorizerStatus(endpoint: endpoint.isEmpty ? o.endpoint : endpoint, metadata: read, counts: c)
    }
}
