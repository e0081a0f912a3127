import Foundation
import JOSE
import OAuth
import Yams

/// The `authorization_server` section (AuthorizationServerConfig.swift): what needs more than
/// its key table — the signing keys read from their files, the scopes' rules, the client
/// policy, the ID-JAG issuers checked against `issuers:`.
extension ConfigParser {
    static func authorizationServer(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader)
        -> AuthorizationServerConfig?
    {
        let p = "authorization_server"
        guard let node, let m = r.mapping(node, path: p, section: .authorizationServer) else { return nil }
        var c = AuthorizationServerConfig()
        AuthorizationServerConfig.keyTable.read(m, into: &c, path: p, r)
        if m["issuer"] == nil {
            if let first = cfg.publicURLs.first {
                c.issuer = "\(first.scheme)://\(first.authority)"
            } else {
                r.problem("\(p).issuer", node, "is required when there is no public_url")
            }
        }
        if let n = m["signing_keys"], let items = r.sequence(n, path: "\(p).signing_keys") {
            for (i, item) in items.enumerated() {
                guard let file = r.string(item, path: "\(p).signing_keys[\(i)]") else { continue }
                let (key, alg) = clientKey(file: file, node: item, algNode: nil, path: "\(p).signing_keys[\(i)]", r)
                guard let key, let alg else { continue }
                // The JWKS names every key; one without a kid is named by its thumbprint (RFC 7638).
                c.signingKeys.append((key, alg, key.kid ?? key.thumbprint()))
            }
            if items.isEmpty { r.problem("\(p).signing_keys", n, "names no key") }
        } else if m["signing_keys"] == nil {
            r.problem("\(p).signing_keys", node, "is required: the keys the access tokens are signed with")
        }
        if let n = m["scopes"], let scopes = r.mapping(n, path: "\(p).scopes", section: nil) {
            for (name, value) in scopes.sorted(by: { $0.key < $1.key }) {
                let sp = "\(p).scopes.\(name)"
                guard ScopeText.isToken(name), name != "offline_access" else {
                    r.problem(sp, value, "is not a scope this AS can grant (RFC 6749 §3.3; never offline_access)")
                    continue
                }
                if case .scalar(let s) = value, s.string.isEmpty || s.string == "~" || s.string == "null" {
                    c.scopes.append((name, AuthorizationRequirement()))
                } else if case .mapping(let rule) = value, rule.isEmpty {
                    c.scopes.append((name, AuthorizationRequirement()))
                } else {
                    c.scopes.append((name, requirement(value, path: sp, r)))
                }
            }
            if scopes.isEmpty { r.problem("\(p).scopes", n, "names no scope") }
        } else if m["scopes"] == nil {
            r.problem("\(p).scopes", node, "is required: the scopes a user may be granted")
        }
        if let n = m["login"], let name = r.string(n, path: "\(p).login") {
            // Users sign in through the existing login: a client with an issuer to send them to.
            if let client = cfg.clients[name], client.issuer != nil {
                c.login = name
            } else {
                r.problem(
                    "\(p).login", n,
                    "\"\(name)\" is not a login client (a clients: entry with an issuer); defined: \(cfg.clients.keys.sorted().joined(separator: ", "))"
                )
            }
        }
        if let n = m["clients"], let cm = r.mapping(n, path: "\(p).clients", section: .asClients) {
            AuthorizationServerConfig.clientsKeyTable.read(cm, into: &c.clients, path: "\(p).clients", r)
            if let n = cm["registration_rate_limit"] {
                let path = "\(p).clients.registration_rate_limit"
                // By address only: whoever registers has no identity yet, and a header is theirs to vary.
                c.clients.registrationLimits = rateLimitPolicies(n, path: path, defined: cfg.rateLimits, r).filter {
                    guard $0.key == .ip else {
                        r.problem(path, n, "\"\($0.name)\" counts by \($0.key.text): registrations are counted by ip")
                        return false
                    }
                    return true
                }
            }
        }
        // Without consent, a client the user never saw gets a code: only from hosts the
        // operator named (the MCP spec's confused deputy; RFC 9700 §4.1).
        if !c.consent, c.clients.allowedHosts.isEmpty {
            r.problem(
                "\(p).consent", m["consent"],
                "consent: false needs clients.allowed_client_hosts: without it any public host's client would get codes with no page"
            )
        }
        if let n = m["id_jag"], let jm = r.mapping(n, path: "\(p).id_jag", section: .asIDJAG) {
            guard let list = jm["issuers"] else {
                r.problem("\(p).id_jag.issuers", n, "is required")
                return c
            }
            for (i, name) in exchangeNames(list, path: "\(p).id_jag.issuers", r).enumerated() {
                if cfg.issuers[name] == nil {
                    r.problem(
                        "\(p).id_jag.issuers[\(i)]", list,
                        "\"\(name)\" is not defined; defined: \(cfg.issuers.keys.sorted().joined(separator: ", "))")
                } else {
                    c.identityAssertionIssuers.append(name)
                }
            }
        }
        return c
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
                "issuers.self", top["issuers"],
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
