import Foundation
import JOSE
import OAuth
import Yams

/// The `authorization_server` section (AuthorizationServerConfig.swift): its table, then the
/// check between consent and the client hosts; the signing keys and the scopes' rules its rows
/// read.
extension ConfigParser {
    static func authorizationServer(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader)
        -> AuthorizationServerConfig?
    {
        let p = "authorization_server"
        guard let node, let m = r.mapping(node, path: p, section: .authorizationServer) else { return nil }
        var d = AuthorizationServerDraft(node: node)
        AuthorizationServerConfig.keyTable.read(m, into: &d, path: p, ConfigContext(cfg: cfg, r: r))
        // Without consent, a client the user never saw gets a code: only from hosts the
        // operator named (the MCP spec's confused deputy; RFC 9700 §4.1).
        if !d.server.consent, d.server.clients.allowedHosts.isEmpty {
            r.problem(
                "\(p).consent", d.consent,
                "consent: false needs clients.allowed_client_hosts: without it any public host's client would get codes with no page"
            )
        }
        return d.server
    }

    /// `signing_keys`: the key files, each with the algorithm it signs with and its `kid`.
    static func signingKeys(_ n: Node, path p: String, _ r: ConfigReader) -> [(
        key: JWK, alg: JWSAlgorithm, kid: String
    )] {
        guard let items = r.sequence(n, path: p) else { return [] }
        if items.isEmpty { r.problem(p, n, "names no key") }
        return items.enumerated().compactMap { i, item in
            guard let file = r.string(item, path: "\(p)[\(i)]") else { return nil }
            let (key, alg) = clientKey(file: file, node: item, algNode: nil, path: "\(p)[\(i)]", r)
            guard let key, let alg else { return nil }
            // The JWKS names every key; one without a kid is named by its thumbprint (RFC 7638).
            return (key, alg, key.kid ?? key.thumbprint())
        }
    }

    /// `scopes`: each scope this AS grants, with the rule a user's claims must meet for it
    /// (`{}` or nothing: every user).
    static func grantableScopes(_ n: Node, path p: String, _ r: ConfigReader) -> [(
        name: String, rule: AuthorizationRequirement
    )] {
        guard let scopes = r.mapping(n, path: p, section: nil) else { return [] }
        if scopes.isEmpty { r.problem(p, n, "names no scope") }
        var out: [(name: String, rule: AuthorizationRequirement)] = []
        for (name, value) in scopes.sorted(by: { $0.key < $1.key }) {
            let sp = "\(p).\(name)"
            guard ScopeText.isToken(name), name != "offline_access" else {
                r.problem(sp, value, "is not a scope this AS can grant (RFC 6749 §3.3; never offline_access)")
                continue
            }
            if case .scalar(let s) = value, s.string.isEmpty || s.string == "~" || s.string == "null" {
                out.append((name, AuthorizationRequirement()))
            } else if case .mapping(let rule) = value, rule.isEmpty {
                out.append((name, AuthorizationRequirement()))
            } else {
                out.append((name, requirement(value, path: sp, r)))
            }
        }
        return out
    }
}

/// RFC 6749 §3.3's scope-token: one or more of %x21 / %x23-5B / %x5D-7E.
enum ScopeText {
    static func isToken(_ s: String) -> Bool { AuthorizationRequest.isScopeToken(s) }
}

extension ConfigParser {
    /// The AS as an `issuers:` entry named `self`: routes that take its tokens name it. Its
    /// keys are the AS's own; its tokens are RFC 9068 JWTs (`typ: at+jwt`) whose `aud` is the
    /// route's `resource` (the route's own check, RFC 8707).
    static func selfIssuer(
        _ server: AuthorizationServerConfig, into cfg: inout GatewayConfig, top: [String: Node], _ r: ConfigReader
    ) {
        if cfg.issuers[AuthorizationServerConfig.issuerName] != nil {
            r.problem(
                "issuers.self", ConfigKeyPath.node(at: "issuers.self", in: top),
                "the name self is the authorization server's (authorization_server:); give this issuer another")
            return
        }
        var issuer = IssuerConfig(name: AuthorizationServerConfig.issuerName, issuer: server.issuer, keys: .own)
        issuer.algorithms = Set(server.signingKeys.map(\.alg))
        issuer.accessTokenType = "at+jwt"
        cfg.issuers[issuer.name] = issuer
    }
}

extension ConfigParser {
    /// A route that takes the AS's tokens names its `resource`: the AS issues a token for one
    /// resource (its `aud`), so a route without one would refuse every token it issued.
    static func authorizationServerRoutes(_ cfg: GatewayConfig, routesNode: Node?, _ r: ConfigReader) {
        guard cfg.authorizationServer != nil else { return }
        // Replicas open each other's codes, refresh tokens and revocations with `session.keys`.
        if case .redis = cfg.store, cfg.session.keys.isEmpty {
            r.problem(
                "session.keys", nil,
                "with a redis store and authorization_server, session.keys must be set: every replica seals and opens the grants with them"
            )
        }
        let nodes = routesNode?.sequence.map(Array.init) ?? []
        for route in cfg.routes {
            guard let tokens = route.options.auth.tokenRoute,
                tokens.issuers.contains(AuthorizationServerConfig.issuerName),
                tokens.resource == nil
            else { continue }
            r.problem(
                "routes[\(route.index)].resource", route.index < nodes.count ? nodes[route.index] : nil,
                "a route that takes the authorization server's tokens (issuers: [self]) needs resource: its tokens are for one"
            )
        }
    }
}
