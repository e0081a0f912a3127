import Yams

/// What a config may say but a reviewer should hear about: settings that are allowed and
/// sometimes needed, yet weaken a guarantee. check-config prints them; the server logs them
/// at start and on every reload. Errors stay in the parser: these never refuse a config.
extension ConfigParser {
    static func warnings(_ cfg: GatewayConfig, top: [String: Node]) -> [ConfigProblem] {
        var out = templateWarnings(cfg)
        func warn(_ path: String, _ node: Node?, _ message: String) {
            out.append(ConfigProblem(path: path, line: node?.mark.map { $0.line }, message: message))
        }
        /// At the key the path names, with its line.
        func warn(_ path: String, _ message: String) {
            warn(path, ConfigKeyPath.node(at: path, in: top), message)
        }
        if let domain = cfg.session.cookieDomain {
            // RFC 6265 §8.6 / §8.5: a Domain cookie is sent to, and can be set by, every host
            // under the domain; only the __Host- prefix (host-only) rules that out.
            warn(
                "session.cookie_domain",
                "every host under \(domain) receives the sealed session cookie (also hosts not behind tokengate), and any of them "
                    + "that serves HTTPS can set or shadow it (login CSRF, session fixation, or a forced logout through a second copy); "
                    + "leave cookie_domain out (host-only __Host- cookie) unless one login across subdomains is needed and you trust every host under \(domain)"
            )
        }
        for (name, t) in cfg.sharedSignals.sorted(by: { $0.key < $1.key })
        where t.revocationTTL < cfg.session.absoluteTimeout {
            // A revocation that ends before the sessions it ended would let them back in.
            warn(
                "shared_signals.\(name).revocation_ttl",
                "is shorter than session.absolute_timeout: a session this transmitter revoked passes again once its "
                    + "revocation ends; make it at least as long as the longest token or session lifetime")
        }
        for (name, policy) in cfg.signatures.sorted(by: { $0.key < $1.key }) {
            // RFC 9421 §2.2.8: `@query-param` covers the parameters it names, one each; the
            // rest of the query is nobody's, so `&amount=99` can be added unsigned.
            let covered = policy.requirements.components.map(\.name)
            if covered.contains("@query-param"),
                !covered.contains(where: { ["@query", "@target-uri", "@request-target"].contains($0) })
            {
                warn(
                    "signatures.\(name).components",
                    "@query-param signs only the parameters it names: a client may add others (&x=1) unsigned, and an "
                        + "upstream that reads them acts on what nobody signed; cover @query or @target-uri to sign the "
                        + "whole query")
            }
        }
        for route in cfg.routes {
            let p = "routes[\(route.index)]"
            if route.options.settings.has(ResponseSigningStage.Settings.self) {
                // Streams cannot be held whole to be digested and signed (signatures.md).
                warn(
                    "\(p).sign_response", nil,
                    "answers that stream go unsigned: event streams, gRPC, answers marked X-Accel-Buffering: no, "
                        + "upgrades (this route allows \(route.options.upgrade.protocols.isEmpty ? "none" : "WebSocket")), "
                        + "and answers without content (HEAD, 204, 304); a client that requires a signature refuses them"
                )
            }
            if cfg.decision.enabled, !route.options.forwarding.certificateHeaders.isEmpty {
                // A verdict never carries them: the connection a decision sees is the ingress's.
                warn(
                    "\(p).certificate_headers", nil,
                    "decision mode never sets these (it sees the ingress's connection, not the client's certificate): "
                        + "the ingress must clear the client's own \(route.options.forwarding.certificateHeaders.map(\.header).joined(separator: ", ")) "
                        + "itself, or they reach the upstream as the client sent them")
            }
            if let tokens = route.options.auth.tokenRoute, tokens.mcp != nil, tokens.forwardToken {
                // MCP authorization (2025-11-25, "Token Passthrough"): an MCP server must not
                // accept or pass on tokens issued for another resource.
                warn(
                    "\(p).forward_token", nil,
                    "this MCP route passes the client's access token to the MCP server; the MCP authorization spec forbids "
                        + "token passthrough: the server could replay it elsewhere. Leave forward_token out and use the "
                        + "identity headers, identity_assertion, or token_exchange for a token of the server's own")
            }
            if route.options.auth.tokenRoute?.mcp != nil, route.match.host == nil, cfg.publicURLs.isEmpty {
                // MCPOrigin: without its own name, the route takes any Host, and a rebound
                // name's Origin agrees with it.
                warn(
                    "\(p).mcp", nil,
                    "this MCP route knows no name of its own (no match.host, no public_url): a page whose DNS name "
                        + "an attacker points at the gateway sends a Host and an Origin that agree, and passes the "
                        + "DNS-rebinding check; set public_url (or match.host)")
            }
            if let tokens = route.options.auth.tokenRoute, tokens.resource != nil,
                ConfigParser.scopesIncludingOffline(of: [tokens.requirement]).contains("offline_access")
            {
                // A resource's metadata and challenges tell clients what to ask for: a refresh
                // token is no access to it (MCP 2026-07-28).
                warn(
                    "\(p).require.scopes", nil,
                    "offline_access grants a refresh token, not access to this resource: a token without it is "
                        + "refused here, yet neither scopes_supported nor a challenge names it; require the "
                        + "resource's own scopes")
            }
            if let tokens = route.options.auth.tokenRoute, tokens.requirement.maxAge != nil {
                // RFC 9068 §2.2.1: `auth_time` is in an access token only when the AS puts it
                // there; without it, every token is refused for its freshness.
                warn(
                    "\(p).require.max_age", nil,
                    "access tokens carry auth_time only when their AS puts it there (RFC 9068 §2.2.1, optional): "
                        + "a token of \(tokens.issuers.sorted().joined(separator: ", ")) without it gets 401 "
                        + "insufficient_user_authentication; check that those issuers' access tokens say auth_time")
            }
            // Who vouched for the caller: with several, a user of one can claim another's sub/groups.
            let clients = route.options.auth.loginRoute?.clients ?? []
            let issuers = route.options.auth.vouchers(clients: cfg.clients)
            let several = clients.count > 1 || issuers.count > 1
            guard several else { continue }
            let requirement =
                route.options.auth.loginRoute?.sessionRequirement ?? route.options.auth.tokenRoute?.requirement
            let vouchers =
                clients.count > 1
                ? "clients \(clients.joined(separator: ", "))"
                : "issuers \(issuers.sorted().joined(separator: ", "))"
            if let req = requirement, !req.isEmpty, !req.isScoped {
                warn(
                    "\(p).require", nil,
                    "this route accepts callers from \(vouchers), and its require rules are met by a user of any of them "
                        + "(an IdP can mint the same sub, groups or email as another's user); scope the rules with "
                        + "require.issuers: [...] or require.clients: [...] (per any_of alternative if needed)")
            }
            if route.options.forwarding.identityAssertion != nil {
                warn(
                    "\(p).identity_assertion", nil,
                    "this route accepts callers from \(vouchers): the upstream must tell them apart by the assertion's idp "
                        + "(and client) claims, not by sub or groups alone")
            }
            let policies = route.options.settings[RateLimitStage.Settings.self] ?? []
            for policy in policies where policy.key.namesCaller {
                let bare = policy.bareOverrides(issuers: Set(cfg.issuers.keys))
                warn(
                    "\(p).rate_limit", nil,
                    "this route accepts callers from \(vouchers): \"\(policy.name)\" counts each issuer's "
                        + "\(policy.key.text) apart (ISSUER/VALUE)"
                        + (bare.isEmpty
                            ? ""
                            : "; its overrides \(bare.joined(separator: ", ")) name no issuer and apply to no caller "
                                + "here: write them as ISSUER/VALUE"))
            }
            if route.options.settings.has(AuthorizeStage.Settings.self) {
                warn(
                    "\(p).authorize", nil,
                    "this route accepts callers from \(vouchers): the PDP must tell them apart by subject.properties.iss, "
                        + "which tokengate always sends, not by subject.id alone")
            }
        }
        return out
    }
}
