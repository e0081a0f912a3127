import Reactor
import Yams

/// The checks between the keys of one section (an upstream, its `tls:`, …), made once the
/// section's table has read its keys.
extension ConfigValidation {
    /// What an upstream's checks look at.
    struct UpstreamInput {
        var keys: UpstreamKeys
        /// `upstreams.NAME`.
        var path: String
        var upstream: UpstreamConfig
        var https: Bool
    }

    /// `protocol` and `tls` against the URL's scheme.
    static func upstream(_ x: UpstreamInput, _ r: ConfigReader) {
        let p = x.path
        switch x.keys.protocol?.value {
        case .h2c where x.https:
            r.problem(
                "\(p).protocol", x.keys.protocol?.node,
                "h2c is HTTP/2 without TLS; with an https:// url say protocol: h2")
        case .h2 where !x.https:
            r.problem(
                "\(p).protocol", x.keys.protocol?.node,
                "h2 is HTTP/2 over TLS and needs an https:// url; say h2c for plain HTTP/2")
        default: break
        }
        if !x.https, let t = x.keys.tls {
            let up = x.upstream
            r.problem(
                "\(p).tls", t,
                "applies only to an https:// url; make the url https://\(up.host):\(up.port)\(up.basePath) or remove tls"
            )
        }
    }

    /// `upstreams.NAME.tls`: a client certificate needs its key, and a CA is no use without
    /// verification. False when the settings cannot make a TLS context.
    static func upstreamTLS(
        _ given: UpstreamTLSKeyContext, node: Node, path p: String, _ tls: UpstreamTLSConfig, _ r: ConfigReader
    ) -> Bool {
        var fits = true
        if (given.certFile == nil) != (given.keyFile == nil) {
            let missing = given.certFile == nil ? "cert_file" : "key_file"
            r.problem(
                p, node, "a client certificate needs both cert_file and key_file; add \(missing) or remove the other")
            fits = false
        }
        if tls.insecureSkipVerify && given.caFile != nil {
            r.problem(
                "\(p).insecure_skip_verify", given.insecureSkipVerify,
                "turns certificate verification off, so ca_file would never be used; remove insecure_skip_verify (ca_file is the safe way to trust a private CA)"
            )
            fits = false
        }
        return fits
    }

    /// `session.same_site: none` needs `secure_cookie: true`.
    static func session(_ s: SessionConfig, _ m: [String: Node], _ r: ConfigReader) {
        if s.sameSite == .none && !s.secureCookie {
            r.problem(
                "session.same_site", m["same_site"],
                "same_site: none needs secure_cookie: true (browsers drop SameSite=None cookies that are not Secure)")
        }
    }

    /// The decision endpoints against each other: apart, and not all off.
    static func decision(_ d: DecisionConfig, _ m: [String: Node], node: Node, _ r: ConfigReader) {
        if let prefix = d.extAuthzPrefix {
            for (key, p) in [("path", d.path), ("forward_auth_path", d.forwardAuthPath)] {
                if let p, p == prefix || p.hasPrefix(prefix + "/") {
                    r.problem(
                        "decision.\(key)", m[key] ?? node,
                        "lies under decision.ext_authz_prefix \(prefix); pick another path or prefix")
                }
            }
        }
        if let a = d.path, a == d.forwardAuthPath {
            r.problem(
                "decision.forward_auth_path", m["forward_auth_path"] ?? node,
                "is decision.path too: each ingress style needs its own endpoint (nginx: path; Traefik, Caddy: forward_auth_path)"
            )
        }
        if d.path == nil && d.forwardAuthPath == nil && d.extAuthzPrefix == nil && !d.extAuthzGRPC {
            r.problem(
                "decision", node,
                "every endpoint is off: set path, forward_auth_path, ext_authz_prefix or ext_authz_grpc")
        }
    }

    /// An issuer's keys come from exactly one place.
    static func issuerKeySource(
        discovery: Bool, jwksURI: Bool, jwksFile: Bool, path p: String, node: Node, _ r: ConfigReader
    ) {
        if [discovery, jwksURI, jwksFile].filter({ $0 }).count != 1 {
            r.problem(p, node, "give exactly one of discovery: true, jwks_uri or jwks_file")
        }
    }

    /// Introspection needs an endpoint: its own, or the issuer's metadata's. False when it has
    /// none.
    static func introspectionEndpoint(
        _ endpoint: Bool, discovery: Bool, path p: String, node: Node, _ r: ConfigReader
    ) -> Bool {
        if endpoint || discovery { return true }
        r.problem(p, node, "needs endpoint: URL (or discovery: true on the issuer)")
        return false
    }

    /// A client's request_mode that signs a request object needs its key_file (RFC 9101).
    static func client(_ c: ClientConfig, requestMode: Node?, path p: String, hasKey: Bool, _ r: ConfigReader) {
        if c.login.requestMode != .plain && !hasKey, let requestMode {
            r.problem(
                "\(p).request_mode", requestMode,
                "request_mode \(c.login.requestMode.rawValue) signs a request object: add key_file (tokengate keys generate)"
            )
        }
    }

    /// A listener's `tls:`: one certificate or a list, the cipher lists only with the custom
    /// profile, the client certificate settings only with their CAs (`clients` nil: no
    /// client_ca_file was read).
    static func listenerTLS(
        _ keys: ListenerTLSKeys, node: Node, path p: String, profile: TLSProfile?, clients: ClientCertificates?,
        _ r: ConfigReader
    ) {
        if keys.certificates != nil && (keys.certFile != nil || keys.keyFile != nil) {
            r.problem(p, node, "takes cert_file and key_file, or certificates, not both")
        }
        if profile == .intermediate || profile == .modern {
            let lists = [("ciphers", keys.ciphers), ("ciphersuites", keys.ciphersuites), ("curves", keys.curves)]
            for (key, given) in lists {
                guard let given else { continue }
                r.problem("\(p).\(key)", given.node, "is taken only with profile: custom")
            }
        }
        if clients == nil {
            for (key, given) in [("client_certificate", keys.clientCertificate), ("client_crl_file", keys.clientCRL)] {
                guard let given else { continue }
                r.problem("\(p).\(key)", given.node, "needs client_ca_file (the CAs client certificates must chain to)")
            }
        }
    }

    /// A route's `match:` takes one path: exact, a prefix or a template.
    static func routeMatch(_ paths: [GivenNode], node: Node, path p: String, _ r: ConfigReader) {
        if paths.count > 1 {
            r.problem(
                p, node,
                "give one of path, path_prefix or path_template, not several (here: \(paths.map(\.name).joined(separator: ", ")))"
            )
        } else if paths.isEmpty {
            r.problem(p, node, "needs path: /exact, path_prefix: /prefix/ or path_template: /items/{id}")
        }
    }

    /// What a route's `identity_assertion:` needs: a caller, a key to sign with, and the
    /// gateway's origin for `iss` (the first that is missing is said). The origin, or nil.
    static func identityAssertion(node: Node, path p: String, auth: AuthMode, cfg: GatewayConfig, _ r: ConfigReader)
        -> PublicURL?
    {
        if auth == .none {
            r.problem(p, node, "has no effect with auth: none (there is no caller to assert)")
            return nil
        }
        guard !cfg.assertionKeys.isEmpty else {
            r.problem(
                p, node,
                "needs identity_assertion_keys: [FILE] at the top level (make a key with: tokengate keys generate --out assertion.jwk)"
            )
            return nil
        }
        guard let origin = cfg.publicURLs.first else {
            r.problem(
                p, node,
                "needs public_url: the assertion's iss is the gateway's public origin (e.g. https://gw.example.com)")
            return nil
        }
        return origin
    }

    /// `mcp:` judges calls by the access token, and reads the body as JSON-RPC. False when it
    /// cannot apply to the route.
    static func mcp(_ k: RouteKeys, auth: AuthMode, _ r: ConfigReader) -> Bool {
        guard let given = k.mcp else { return false }
        guard auth == .bearer || auth == .dpop || auth == .token || auth == .api_key else {
            r.problem(
                given.path, given.node,
                "needs auth: bearer, dpop, token or api_key (calls are judged by the caller's scopes)")
            return false
        }
        if let n = k.tokenInBody, r.bool(n.node, path: n.path) == true {
            r.problem(
                n.path, n.node,
                "cannot be used with mcp: an MCP request body is one JSON-RPC message, not a form (RFC 6750 §2.2)")
        }
        return true
    }

    /// `token_exchange:` exchanges the caller's access token, which then never goes upstream.
    /// False when it cannot apply to the route.
    static func tokenExchange(_ k: RouteKeys, auth: AuthMode, _ r: ConfigReader) -> Bool {
        guard let given = k.tokenExchange else { return false }
        guard auth == .bearer || auth == .dpop || auth == .token else {
            r.problem(
                given.path, given.node,
                "needs auth: bearer, dpop or token (the caller's access token is what is exchanged)")
            return false
        }
        if let n = k.forwardToken, r.bool(n.node, path: n.path) == true {
            r.problem(
                n.path, n.node,
                "cannot be used with token_exchange: the upstream gets the exchanged token, never the caller's")
        }
        if let n = k.apiKeys {
            r.problem(n.path, n.node, "cannot be used with token_exchange: a key's caller has no token to exchange")
        }
        return true
    }

    /// An exchange needs a token endpoint (its own or the issuer's metadata's) and a target.
    static func tokenExchangeTarget(
        _ x: TokenExchangeConfig, issuer: IssuerConfig, node: Node, path p: String, _ r: ConfigReader
    ) {
        if x.endpoint == nil && issuer.keys != .discovery {
            r.problem(
                p, node, "needs endpoint: URL (the issuer \(x.issuer) has no discovery metadata to take it from)")
        }
        if x.target.names.isEmpty {
            r.problem(
                p, node,
                "needs resource: URL or audience: NAME (what the exchanged token is for; the upstream checks its aud)")
        }
    }

    /// A client's `auth` method and the key it needs: a secret, a private key, an assertion
    /// file, or a client certificate. False when that key is missing.
    static func clientAuthentication(
        _ method: String, _ d: ClientDraft, path p: String, node: Node, _ r: ConfigReader
    ) -> Bool {
        switch method {
        case "client_secret_basic", "client_secret_post", "client_secret_jwt":
            if d.secret == nil && d.secretFile == nil {
                r.problem(p, node, "\(method) needs secret (or secret_file)")
                return false
            }
        case "private_key_jwt":
            if d.keyFile == nil {
                r.problem(p, node, "private_key_jwt needs key_file (a private JWK or PEM)")
                return false
            }
        case "client_assertion_file":
            if d.assertionFile == nil {
                r.problem(p, node, "client_assertion_file needs assertion_file (the path of the JWT to send)")
                return false
            }
        case "tls_client_auth", "self_signed_tls_client_auth":
            if d.tls == nil {
                r.problem(p, node, "\(method) needs tls: { cert_file, key_file } (the client certificate, PEM)")
                return false
            }
        default: break
        }
        return true
    }
}
