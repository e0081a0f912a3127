import Foundation
import JOSE
import OAuth
import Yams

/// The readers behind the route options of RouteOptions.swift, `identity_assertion_keys`,
/// `session.cookie_domain` and `session.same_site`, and `require.email_domains` / `require.any_of`.
extension ConfigParser {
    /// `strip_prefix: true`: the match's `path_prefix`, without its trailing `/`, is cut from
    /// the forwarded path.
    static func stripPrefix(_ n: Node, path p: String, _ route: inout RouteConfig, _ r: ConfigReader) {
        guard let b = r.bool(n, path: p), b else { return }
        switch route.match.path {
        case .exact:
            r.problem(
                p, n,
                "needs match.path_prefix (an exact path would leave nothing to forward); use path_prefix: or remove strip_prefix"
            )
        case .template:
            r.problem(
                p, n,
                "needs match.path_prefix (a path_template has no fixed prefix to strip); use path_prefix: or remove strip_prefix"
            )
        case .prefix(let prefix):
            let bare = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
            if bare.isEmpty {
                r.problem(p, n, "path_prefix: / has nothing to strip; remove strip_prefix")
            } else {
                route.options.forwarding.strippedPrefix = bare
            }
        }
    }

    /// `certificate_headers: { X-Client-Subject: subject, X-Spiffe-Id: uri }`.
    static func certificateHeaders(_ node: Node, path p: String, _ r: ConfigReader)
        -> [(header: String, field: CertificateField)]
    {
        guard let m = r.mapping(node, path: p, section: nil) else { return [] }
        var out: [(header: String, field: CertificateField)] = []
        for (header, value) in m.sorted(by: { $0.key < $1.key }) {
            guard headerName(header, path: "\(p).\(header)", value, allowAuthorization: false, r) else { continue }
            guard let s = r.string(value, path: "\(p).\(header)"), let field = CertificateField(rawValue: s) else {
                r.problem("\(p).\(header)", value, "must be subject, uri or sha256")
                continue
            }
            out.append((header, field))
        }
        return out
    }

    /// A header the gateway itself sets upstream: a valid name that no protocol rule owns.
    static func headerName(_ h: String, path: String, _ n: Node, allowAuthorization: Bool, _ r: ConfigReader)
        -> Bool
    {
        let lower = h.lowercased()
        guard !h.isEmpty, h.utf8.allSatisfy(HeaderRules.isTokenChar) else {
            r.problem(path, n, "\"\(h)\" is not a header name")
            return false
        }
        if lower == "authorization" { if allowAuthorization { return true } }
        if lower == "authorization" || lower == "cookie" || lower == "dpop"
            || !HeaderRules.forwardsRequestHeader(h, listed: [], reservedPrefix: nil)
        {
            r.problem(
                path, n, "\(h) is a header the gateway or the protocol owns; pick another name such as X-Id-Token")
            return false
        }
        return true
    }

    static func identityAssertion(
        _ node: Node, path p: String, route: RouteConfig, auth: AuthMode, cfg: GatewayConfig, _ r: ConfigReader
    ) -> IdentityAssertionConfig? {
        guard let m = r.mapping(node, path: p, section: .identityAssertion) else { return nil }
        guard let origin = ConfigValidation.identityAssertion(node: node, path: p, auth: auth, cfg: cfg, r) else {
            return nil
        }
        var audience = ""
        if let up = cfg.upstreams[route.upstream] {
            let host = up.host.contains(":") ? "[\(up.host)]" : up.host
            audience = "http://\(host):\(up.port)\(up.basePath)"
        }
        var a = IdentityAssertionConfig(audience: audience, issuer: "\(origin.scheme)://\(origin.authority)")
        IdentityAssertionConfig.keyTable.read(m, into: &a, path: p, r)
        return a
    }

    /// `identity_assertion_keys: [FILE, …]`: private keys (JWK or PEM, e.g. from `tokengate keys
    /// generate`). The first signs; all are published at login.jwks_path, so a new key can be
    /// listed second (published) before it is moved first (signing).
    static func assertionKeys(_ node: Node?, _ r: ConfigReader) -> [AssertionKey] {
        guard let node, let seq = r.sequence(node, path: "identity_assertion_keys") else { return [] }
        var out: [AssertionKey] = []
        for (j, item) in seq.enumerated() {
            let p = "identity_assertion_keys[\(j)]"
            guard let file = r.string(item, path: p) else { continue }
            let (key, alg) = clientKey(file: file, node: item, algNode: nil, path: p, r)
            guard let key, let alg else { continue }
            guard let kid = key.kid, !kid.isEmpty else {
                r.problem(
                    p, item, "the key needs a kid (upstreams pick the key by it); tokengate keys generate sets one")
                continue
            }
            if out.contains(where: { $0.key.kid == kid }) {
                r.problem(p, item, "kid \(kid) is used by another key in the list")
                continue
            }
            out.append(AssertionKey(key: key, alg: alg))
        }
        if seq.isEmpty { r.problem("identity_assertion_keys", node, "is empty; list at least one key file") }
        return out
    }

    /// A browser refuses a Set-Cookie whose Domain does not cover the host it came from
    /// (RFC 6265 §5.3 step 6): every public_url must be under `session.cookie_domain`.
    static func checkCookieDomain(_ cfg: GatewayConfig, node: Node?, _ r: ConfigReader) {
        guard let domain = cfg.session.cookieDomain else { return }
        // Without Secure, the cookie cannot carry the __Secure- prefix (RFC 6265bis §4.1.3.1):
        // any host under the domain, over plain HTTP too, could set one the gateway would take.
        if !cfg.session.secureCookie {
            r.problem(
                "session.cookie_domain", node,
                "needs secure_cookie: true: a Domain cookie without Secure has no __Secure- prefix, so any host under \(domain), even over plain http, could plant a session cookie; remove cookie_domain (host-only cookie) or set secure_cookie: true"
            )
        }
        for url in cfg.publicURLs {
            var host = url.authority.lowercased()
            if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") { host = String(host[..<colon]) }
            if host != domain && !host.hasSuffix("." + domain) {
                r.problem(
                    "session.cookie_domain", node,
                    "\(domain) does not cover public_url \(url.scheme)://\(url.authority): browsers would refuse the cookie there; use a domain every public_url is under"
                )
            }
        }
    }

    /// `require.issuers` / `require.clients` (and those of every any_of alternative) name
    /// issuers the route accepts tokens from (`tokenIssuers`), or login clients it lists
    /// (`clients`).
    static func checkVouchers(
        _ req: AuthorizationRequirement, tokenIssuers: [String], clients: [String], cfg: GatewayConfig, node: Node?,
        path p: String, _ r: ConfigReader
    ) {
        let sessionIssuers = clients.compactMap { cfg.clients[$0]?.issuer }
        for name in req.issuers where !tokenIssuers.contains(name) && !sessionIssuers.contains(name) {
            r.problem(
                "\(p).issuers", node,
                "\(name) is not an issuer this route accepts (route issuers: \(tokenIssuers.joined(separator: ", ")); login clients' issuers: \(sessionIssuers.joined(separator: ", ")))"
            )
        }
        for name in req.clients where !clients.contains(name) {
            r.problem(
                "\(p).clients", node,
                "\(name) is not a login client of this route (clients: \(clients.joined(separator: ", "))); a token never meets require.clients"
            )
        }
        for (j, alt) in req.anyOf.enumerated() {
            checkVouchers(
                alt, tokenIssuers: tokenIssuers, clients: clients, cfg: cfg, node: node, path: "\(p).any_of[\(j)]", r)
        }
    }
}
