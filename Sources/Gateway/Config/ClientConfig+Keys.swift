import OAuth
import Yams

extension ClientConfig {
    /// The keys of `clients.NAME`, each said once: its reference row (type and default,
    /// checked against the model's defaults by ConfigReferenceTests) and its row, read in this
    /// order into a `ClientDraft`. The registration (issuer, client_id, the authentication
    /// method and what it needs: secret, key_file and alg, assertion_file, tls) is kept as
    /// given, for ConfigParser.clients to build the client from; the login settings,
    /// assertion_audience and profile are read into the client here. request_mode against
    /// key_file is ConfigValidation's.
    static let keyTable = ConfigKeyTable<ClientDraft, ConfigReader>([
        .init("issuer", type: "an `issuers:` name", default: "none (required for a login client)") { d, n, p, r in
            d.issuer = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("client_id", type: "string", default: "none: required") { d, n, p, r in
            d.clientID = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "auth",
            type:
                "`client_secret_basic`, `client_secret_post`, `client_secret_jwt`, `private_key_jwt`, `client_assertion_file`, `tls_client_auth` or `self_signed_tls_client_auth`",
            default: "`client_secret_basic`", checkedBy: ConfigDefault.text("client_secret_basic")
        ) { d, n, p, r in
            d.auth = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("secret", type: "secret", default: "none") { d, n, p, _ in d.secret = GivenNode(node: n, path: p) },
        .init("secret_file", type: "path", default: "none") { d, n, p, _ in
            d.secretFile = GivenNode(node: n, path: p)
        },
        .init("key_file", type: "path of a private JWK or PEM (`tokengate keys generate`)", default: "none") {
            d, n, p, r in d.keyFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "assertion_file",
            type: "path of a JWT issued for the client (`auth: client_assertion_file`), read again as it rotates",
            default: "none"
        ) { d, n, p, r in
            d.assertionFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "alg", type: "signing algorithm of `key_file`",
            default: "the key's `alg`, else RS256 (RSA), ES256 (EC), EdDSA"
        ) { d, n, _, _ in
            d.alg = n
        },
        .init(
            "request_mode", type: "`par`, `request`, `request_uri` or `plain`", default: "`par`",
            checkedBy: ConfigDefault.text(LoginClientSettings().requestMode.rawValue)
        ) { d, n, p, r in
            d.requestMode = n
            guard let v = r.string(n, path: p) else { return }
            if let mode = LoginClientSettings.RequestMode(rawValue: v) {
                d.client.login.requestMode = mode
            } else {
                r.problem(p, n, "must be one of par, request, request_uri, plain")
            }
        },
        .init(
            "response_mode", type: "`query`, `jwt` or `query.jwt`", default: "`query`",
            checkedBy: ConfigDefault.text(LoginClientSettings().responseMode.rawValue)
        ) { d, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let mode = LoginClientSettings.ResponseMode(rawValue: v) {
                d.client.login.responseMode = mode
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
        ) { d, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            d.client.login.scopes = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
            if !d.client.login.scopes.contains("openid") {
                r.problem(p, n, "must include openid (the login validates an ID token)")
            }
        },
        .init("redirect_uri", type: "http(s) URL", default: "`public_url` + `login.callback_path`") { d, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if ConfigValues.url(v) == nil && !v.contains("?") {
                r.problem(p, n, "\"\(v)\" is not an http(s) URL")
            } else {
                d.client.login.redirectURI = v
            }
        },
        .init("dpop", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(LoginClientSettings().dpop)) {
            d, n, p, r in
            d.dpop = n
            if let b = r.bool(n, path: p) { d.client.login.dpop = b }
        },
        .init("extra", type: "mapping of authorization request parameters", default: "none") { d, n, p, r in
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
                if let sv = r.string(v, path: "\(p).\(k)") { d.client.login.extra.append((k, sv)) }
            }
        },
        .init(
            "assertion_audience", type: "`issuer` or `endpoint`: the `aud` of client assertions", default: "`issuer`",
            checkedBy: ConfigDefault.text(ClientConfig.AssertionAudience.issuer.rawValue)
        ) { d, n, p, r in
            d.assertionAudience = n
            guard let v = r.string(n, path: p) else { return }
            if let a = ClientConfig.AssertionAudience(rawValue: v) {
                d.client.assertionAudience = a
            } else {
                r.problem(p, n, "must be issuer or endpoint")
            }
        },
        .init(
            "login_hint_from_query", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(LoginClientSettings().loginHintFromQuery)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.client.login.loginHintFromQuery = b }
        },
        .init("post_logout_redirect_uri", type: "URL registered at the AS", default: "none") { d, n, p, r in
            if let v = r.string(n, path: p) { d.client.login.postLogoutRedirectURI = v }
        },
        .init(
            "revoke_on_logout", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(LoginClientSettings().revokeOnLogout)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.client.login.revokeOnLogout = b }
        },
        .init(
            "allow_unverified_email", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(LoginClientSettings().allowUnverifiedEmail)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.client.login.allowUnverifiedEmail = b }
        },
        .init(
            "userinfo", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(LoginClientSettings().userinfo)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.client.login.userinfo = b }
        },
        .init("profile", type: "`fapi2`", default: "none") { d, n, p, r in
            d.client.profile = ConfigParser.securityProfile(n, path: p, r)
        },
        .init("tls", type: "mapping (below)", default: "none: no certificate") { d, n, p, _ in
            d.tls = GivenNode(node: n, path: p)
        }
    ])
}

/// A `clients.NAME` entry as its table reads it: the client its login settings are read into
/// (its registration put in by ConfigParser.clients), and the registration's keys as given.
struct ClientDraft {
    var client: ClientConfig
    var issuer: GivenKey<String>?
    var clientID: GivenKey<String>?
    /// The authentication method's name.
    var auth: GivenKey<String>?
    var secret: GivenNode?
    var secretFile: GivenNode?
    var keyFile: GivenKey<String>?
    var assertionFile: GivenKey<String>?
    var tls: GivenNode?
    // Kept for the checks that point at them (ConfigParser.clientKey, fapi2Client).
    var alg: Node?
    var requestMode: Node?
    var dpop: Node?
    var assertionAudience: Node?

    init(name: String) {
        client = ClientConfig(name: name, issuer: nil, authentication: .tlsClientAuth(clientID: ""))
    }
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
