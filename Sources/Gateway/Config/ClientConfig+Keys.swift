import OAuth
import Yams

extension ClientConfig {
    /// The keys of `clients.NAME`, each said once: its reference row (type and default,
    /// checked against the model's defaults by ConfigReferenceTests) and its reader. The
    /// registration itself (issuer, client_id, the authentication method and what it needs:
    /// secret, key_file and alg, assertion_file, tls) is read by ConfigParser.clients, which builds the client
    /// from it, and `profile` by ConfigParser.securityProfile; the login settings and
    /// assertion_audience here, in this order. request_mode against key_file is
    /// ConfigValidation's.
    static let keyTable = ConfigKeyTable<ClientConfig, ConfigReader>([
        .init(
            "issuer", type: "an `issuers:` name", default: "none (required for a login client)",
            by: "ConfigParser.clients"),
        .init("client_id", type: "string", default: "none: required", by: "ConfigParser.clients"),
        .init(
            "auth",
            type:
                "`client_secret_basic`, `client_secret_post`, `client_secret_jwt`, `private_key_jwt`, `client_assertion_file`, `tls_client_auth` or `self_signed_tls_client_auth`",
            default: "`client_secret_basic`", checkedBy: ConfigDefault.text("client_secret_basic"),
            by: "ConfigParser.clients"),
        .init("secret", type: "secret", default: "none", by: "ConfigParser.clients"),
        .init("secret_file", type: "path", default: "none", by: "ConfigParser.clients"),
        .init(
            "key_file", type: "path of a private JWK or PEM (`tokengate keys generate`)", default: "none",
            by: "ConfigParser.clients"),
        .init(
            "assertion_file",
            type: "path of a JWT issued for the client (`auth: client_assertion_file`), read again as it rotates",
            default: "none", by: "ConfigParser.clients"),
        .init(
            "alg", type: "signing algorithm of `key_file`",
            default: "the key's `alg`, else RS256 (RSA), ES256 (EC), EdDSA", by: "ConfigParser.clients"),
        .init(
            "request_mode", type: "`par`, `request`, `request_uri` or `plain`", default: "`par`",
            checkedBy: ConfigDefault.text(LoginClientSettings().requestMode.rawValue)
        ) { c, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let mode = LoginClientSettings.RequestMode(rawValue: v) {
                c.login.requestMode = mode
            } else {
                r.problem(p, n, "must be one of par, request, request_uri, plain")
            }
        },
        .init(
            "response_mode", type: "`query`, `jwt` or `query.jwt`", default: "`query`",
            checkedBy: ConfigDefault.text(LoginClientSettings().responseMode.rawValue)
        ) { c, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let mode = LoginClientSettings.ResponseMode(rawValue: v) {
                c.login.responseMode = mode
            } else if v == "form_post.jwt" || v == "form_post" {
                // The pending login's cookie is SameSite=Lax: a cross-site POST to the callback
                // would arrive without it, and no login could be found.
                r.problem(
                    p, n,
                    "\(v) is not supported: the login-state cookie is SameSite=Lax, which the AS's cross-site POST does not carry; use jwt"
                )
            } else {
                r.problem(p, n, "must be one of query, jwt, query.jwt")
            }
        },
        .init(
            "scopes", type: "list", default: "`[openid, profile, email]`",
            checkedBy: { cell in
                ConfigDefault.firstValue(cell)?.dropFirst().dropLast().split(separator: ",")
                    .map { $0.trimmingCharacters(in: .whitespaces) } == LoginClientSettings().scopes
            }
        ) { c, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            c.login.scopes = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
            if !c.login.scopes.contains("openid") {
                r.problem(p, n, "must include openid (the login validates an ID token)")
            }
        },
        .init("redirect_uri", type: "http(s) URL", default: "`public_url` + `login.callback_path`") { c, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if ConfigValues.url(v) == nil && !v.contains("?") {
                r.problem(p, n, "\"\(v)\" is not an http(s) URL")
            } else {
                c.login.redirectURI = v
            }
        },
        .init("dpop", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(LoginClientSettings().dpop)) {
            c, n, p, r in
            if let b = r.bool(n, path: p) { c.login.dpop = b }
        },
        .init("extra", type: "mapping of authorization request parameters", default: "none") { c, n, p, r in
            guard let em = r.mapping(n, path: p, section: nil) else { return }
            let reserved: Set<String> = [
                "response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge",
                "code_challenge_method", "request", "request_uri", "response_mode"
            ]
            for (k, v) in em.sorted(by: { $0.key < $1.key }) {
                guard !reserved.contains(k) else {
                    r.problem("\(p).\(k)", v, "is set by the gateway itself")
                    continue
                }
                if let sv = r.string(v, path: "\(p).\(k)") { c.login.extra.append((k, sv)) }
            }
        },
        .init(
            "assertion_audience", type: "`issuer` or `endpoint`: the `aud` of client assertions", default: "`issuer`",
            checkedBy: ConfigDefault.text(ClientConfig.AssertionAudience.issuer.rawValue)
        ) { c, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let a = ClientConfig.AssertionAudience(rawValue: v) {
                c.assertionAudience = a
            } else {
                r.problem(p, n, "must be issuer or endpoint")
            }
        },
        .init(
            "login_hint_from_query", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(LoginClientSettings().loginHintFromQuery)
        ) { c, n, p, r in
            if let b = r.bool(n, path: p) { c.login.loginHintFromQuery = b }
        },
        .init("post_logout_redirect_uri", type: "URL registered at the AS", default: "none") { c, n, p, r in
            if let v = r.string(n, path: p) { c.login.postLogoutRedirectURI = v }
        },
        .init(
            "revoke_on_logout", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(LoginClientSettings().revokeOnLogout)
        ) { c, n, p, r in
            if let b = r.bool(n, path: p) { c.login.revokeOnLogout = b }
        },
        .init(
            "allow_unverified_email", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(LoginClientSettings().allowUnverifiedEmail)
        ) { c, n, p, r in
            if let b = r.bool(n, path: p) { c.login.allowUnverifiedEmail = b }
        },
        .init(
            "userinfo", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(LoginClientSettings().userinfo)
        ) { c, n, p, r in
            if let b = r.bool(n, path: p) { c.login.userinfo = b }
        },
        .init("profile", type: "`fapi2`", default: "none", by: "ConfigParser.securityProfile"),
        .init("tls", type: "mapping (below)", default: "none: no certificate", by: "ConfigParser.clients")
    ])
}

/// A client's `tls:` as its keys say it (`ClientTLS.keyTable`); ConfigParser.clientTLS loads
/// the pair as one (and makes the published JWK of a self-signed certificate).
struct ClientTLSKeys {
    var certFile: GivenKey<String>?
    var keyFile: GivenKey<String>?
}

extension ClientTLS {
    /// The keys of `clients.NAME.tls`.
    static let keyTable = ConfigKeyTable<ClientTLSKeys, ConfigReader>([
        .init("cert_file", type: "path (PEM certificate chain)", default: "none") { k, n, p, r in
            k.certFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("key_file", type: "path (PEM private key)", default: "none") { k, n, p, r in
            k.keyFile = GivenKey(value: r.string(n, path: p), node: n)
        }
    ])
}
