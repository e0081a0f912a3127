import OAuth
import Yams

/// A token route's `resource` (RFC 8707) and the Protected Resource Metadata (RFC 9728)
/// documents the gateway serves for such routes.
extension ConfigParser {
    /// The route's `resource`, `resource_name` and `resource_documentation`; nil without
    /// `resource` or when it is refused (the problem is reported at its key).
    static func protectedResource(_ k: RouteKeys, auth: AuthMode, _ r: ConfigReader) -> ProtectedResourceConfig? {
        let given = k.protectedResource.compactMap { $0 }
        guard !given.isEmpty else { return nil }
        switch auth {
        case .bearer, .dpop, .token: break
        case .none, .login, .login_or_token, .api_key:
            for n in given {
                r.problem(
                    n.path, n.node,
                    "has no effect with auth: \(auth.rawValue) (a resource binds access tokens: auth: bearer, dpop or token)"
                )
            }
            return nil
        }
        guard let resource = k.resource else {
            for n in given {
                r.problem(n.path, n.node, "needs resource: the URL clients ask tokens for (RFC 8707)")
            }
            return nil
        }
        let node = resource.node
        guard let text = r.string(node, path: resource.path) else { return nil }
        let identifier: ResourceIdentifier
        switch ResourceIdentifier.parse(text) {
        case .success(let id): identifier = id
        case .failure(let problem):
            r.problem(resource.path, node, "\"\(text)\" \(problem)")
            return nil
        }
        // The metadata is found by the request's normalized path: a path the normalizer would
        // rewrite could never be asked for.
        let metadataPath = identifier.metadataPath
        guard case .success(let n) = PathNormalizer.normalize(target: metadataPath), n.path == metadataPath else {
            r.problem(resource.path, node, "\"\(text)\" has a path the gateway would not serve as written")
            return nil
        }
        var cfg = ProtectedResourceConfig(identifier: identifier)
        if let given = k.resourceName, let s = r.string(given.node, path: given.path) {
            if s.isEmpty { r.problem(given.path, given.node, "is empty") } else { cfg.name = s }
        }
        if let given = k.resourceDocumentation, let s = r.string(given.node, path: given.path) {
            // A link end users may follow: https, or http on a loopback host as for the resource.
            // A page for developers: unlike the resource, it may have a query, a fragment or
            // any path.
            switch ResourceIdentifier.parse(s) {
            case .success, .failure(.query), .failure(.path): cfg.documentation = s
            case .failure(.fragment) where s.hasPrefix("https://"): cfg.documentation = s
            case .failure(let problem): r.problem(given.path, given.node, "\"\(s)\" \(problem)")
            }
        }
        return cfg
    }

    /// The metadata documents of every route with a `resource`, by the path each is served at
    /// (RFC 9728 §3.1). Two routes may share a resource (one per method, say) only if their
    /// documents are the same: one path serves one document.
    static func protectedResources(_ cfg: GatewayConfig, top: [String: Node], _ r: ConfigReader)
        -> [String: ProtectedResourceDocument]
    {
        var out: [String: ProtectedResourceDocument] = [:]
        for route in cfg.routes {
            guard let tokens = route.options.auth.tokenRoute, let resource = tokens.resource else { continue }
            let doc = ProtectedResourceDocument(
                metadata: metadata(resource, tokens: tokens, issuers: cfg.issuers), route: route.name)
            if let earlier = out[doc.path] {
                if earlier.metadata != doc.metadata {
                    let path = "routes[\(route.index)].resource"
                    r.problem(
                        path, ConfigKeyPath.node(at: path, in: top),
                        "\(route.name) and \(earlier.route) both serve metadata at \(doc.path) with different contents (RFC 9728 §3.1 derives one path per resource path); give them one resource with the same issuers, scopes and schemes, or different paths"
                    )
                }
                continue
            }
            out[doc.path] = doc
        }
        return out
    }

    /// RFC 9728 §2 from the route's settings: its issuers, the scopes its requirement and its
    /// MCP rules name,
    /// where it reads tokens from, and its DPoP rules.
    static func metadata(
        _ resource: ProtectedResourceConfig, tokens: TokenRouteConfig, issuers: [String: IssuerConfig]
    ) -> ProtectedResourceMetadata {
        var methods = ["header"]
        if tokens.tokenInBody { methods.append("body") }
        if tokens.tokenInQuery { methods.append("query") }
        var required: Bool?
        switch tokens.schemes {
        case .bearer: required = nil
        case .dpop: required = true
        case .bearerOrDPoP: required = false
        }
        return ProtectedResourceMetadata(
            resource: resource.identifier,
            authorizationServers: tokens.issuers.compactMap { issuers[$0]?.issuer },
            scopesSupported: scopes(of: [tokens.requirement] + (tokens.mcp?.allRequirements ?? [])),
            bearerMethodsSupported: methods,
            dpopSigningAlgValuesSupported: tokens.dpop.map { $0.algorithms.map(\.rawValue).sorted() },
            dpopBoundAccessTokensRequired: required, resourceName: resource.name,
            resourceDocumentation: resource.documentation)
    }

    /// Every scope the requirements name, their `any_of` alternatives' included, as written
    /// (`offline_access` too).
    static func scopesIncludingOffline(of requirements: [AuthorizationRequirement]) -> [String] {
        var out: [String] = []
        func add(_ req: AuthorizationRequirement) {
            out += req.scopes
            req.anyOf.forEach(add)
        }
        requirements.forEach(add)
        return out
    }

    /// The same, each once, in the order written, without `offline_access`: what
    /// `scopes_supported` and a challenge name.
    static func scopes(of requirements: [AuthorizationRequirement]) -> [String] {
        var out: [String] = []
        // offline_access grants a refresh token, not access to this resource: MCP
        // 2026-07-28 says it SHOULD NOT be in `scopes_supported` (nor in a challenge).
        for s in scopesIncludingOffline(of: requirements) where !out.contains(s) && s != "offline_access" {
            out.append(s)
        }
        return out
    }
}
