import Foundation
import JOSE
import OAuth
import Yams

/// `authorization_server:`: the authorization server MCP clients see, one per gateway
/// (docs/authorization-server.md): its issuer, the keys it signs access tokens with, their
/// life, the scopes a user may be granted (each a `require`-style rule on the user's claims),
/// which clients may come (Client ID Metadata Documents, from which hosts), and which IdPs'
/// Identity Assertion JWT Authorization Grants it takes.
struct AuthorizationServerConfig: Sendable {
    /// The AS's issuer (RFC 8414): its metadata, the `iss` of its tokens, the `aud` an ID-JAG
    /// names. Default: the first `public_url`.
    var issuer = ""
    /// The keys, the first of which signs; all are published at the JWKS endpoint.
    var signingKeys: [(key: JWK, alg: JWSAlgorithm, kid: String)] = []
    var accessTokenTTL = 600.0
    /// The `clients:` entry users sign in through (the existing login); nil: no browser flow,
    /// only the ID-JAG grant.
    var login: String?
    /// How long a refresh-token family lives from its code, however often it rotates.
    var refreshTokenTTL = 86_400.0
    /// Whether a user sees a consent page for a client, resource and scopes not yet granted.
    var consent = true
    /// How long a consent is remembered (per user, client and resource), unless revoked.
    var consentTTL = 30 * 86_400.0
    /// Each scope a user may be granted, and what their claims must meet for it.
    var scopes: [(name: String, rule: AuthorizationRequirement)] = []
    var clients = Clients()
    /// The `issuers:` entries whose ID-JAGs the token endpoint takes; empty: none.
    var identityAssertionIssuers: [String] = []

    struct Clients: Sendable {
        /// Which hosts' metadata documents may be fetched (`host` or `*.domain`); empty: any
        /// public host. A loopback host here is fetched only when the issuer is on loopback
        /// (CIMD §8.6's development exception).
        var allowedHosts: [String] = []
        var caFile: String?
        /// RFC 7591 registration for clients without a metadata document.
        var registration = false
        /// The registration endpoint's per-address limits (default: `RegistrationEndpoint.limit`).
        var registrationLimits: [RateLimitPolicy] = []
    }

    /// How long a registered client is kept.
    static let registrationTTL = 30 * 86_400.0

    /// The session claims the AS reads: its scopes' rules, and those its tokens carry.
    var sessionClaims: Set<String> {
        scopes.reduce(into: Set(IssuedAccessToken.identityClaims)) { $0.formUnion($1.rule.claimNames) }
    }

    /// The `issuers:` name routes use for the AS's tokens.
    static let issuerName = "self"

    /// The signing keys' public halves, each named by its `kid`: the JWKS endpoint's set.
    var publicKeys: JWKSet {
        JWKSet(
            keys: signingKeys.compactMap { entry in
                var o = entry.key.publicJWK()
                o["kid"] = .string(entry.kid)
                o["alg"] = .string(entry.alg.rawValue)
                o["use"] = .string("sig")
                return try? JWK(object: o)
            })
    }

    /// Whether the issuer itself is on a loopback host (a development setup on one machine).
    var issuerIsLoopback: Bool {
        guard let url = ConfigValues.url(issuer) else { return false }
        return url.host == "localhost" || url.host == "::1" || url.host.hasPrefix("127.")
    }
}

extension AuthorizationServerConfig {
    static let keyTable = ConfigKeyTable<AuthorizationServerConfig, ConfigReader>([
        .init(
            "issuer", type: "https URL (http only for a loopback host)", default: "the first `public_url`"
        ) { c, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            guard TransmitterConfig.securedURL(s) != nil else {
                r.problem(p, n, "\"\(s)\" is not an https URL (http only for a loopback host)")
                return
            }
            c.issuer = s.hasSuffix("/") ? String(s.dropLast()) : s
        },
        .init(
            "signing_keys", type: "list of private key files (JWK or PEM); the first signs", default: "none: required",
            by: "ConfigParser.authorizationServer"),
        .init(
            "access_token_ttl", type: "duration, 1m to 1h", default: "`10m`",
            checkedBy: ConfigDefault.duration(AuthorizationServerConfig().accessTokenTTL)
        ) { c, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 60 || v > 3600 { r.problem(p, n, "must be from 1m to 1h") } else { c.accessTokenTTL = v }
        },
        .init(
            "login", type: "a `clients:` name", default: "none: only the ID-JAG grant",
            by: "ConfigParser.authorizationServer"),
        .init(
            "refresh_token_ttl", type: "duration, 5m to 90d", default: "`24h`",
            checkedBy: ConfigDefault.duration(AuthorizationServerConfig().refreshTokenTTL)
        ) { c, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 300 || v > 90 * 86_400 { r.problem(p, n, "must be from 5m to 90d") } else { c.refreshTokenTTL = v }
        },
        .init("consent", type: "bool", default: "`true`", checkedBy: ConfigDefault.bool(true)) { c, n, p, r in
            if let b = r.bool(n, path: p) { c.consent = b }
        },
        .init(
            "consent_ttl", type: "duration, 1h to 365d", default: "`30d`",
            checkedBy: ConfigDefault.duration(AuthorizationServerConfig().consentTTL)
        ) { c, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 3600 || v > 365 * 86_400 { r.problem(p, n, "must be from 1h to 365d") } else { c.consentTTL = v }
        },
        .init(
            "scopes", type: "mapping: a scope to `{}` or a `require`-style rule on the user's claims",
            default: "none: required", by: "ConfigParser.authorizationServer"),
        .init(
            "clients", type: "mapping (below)", default: "metadata documents from any public host",
            by: "ConfigParser.authorizationServer"),
        .init(
            "id_jag", type: "`{ issuers: [NAME, …] }`", default: "none: no ID-JAG is taken",
            by: "ConfigParser.authorizationServer")
    ])

    static let clientsKeyTable = ConfigKeyTable<Clients, ConfigReader>([
        .init(
            "allowed_client_hosts", type: "list of host names or `*.domain` patterns", default: "any public host"
        ) { c, n, p, r in
            guard let items = r.sequence(n, path: p) else { return }
            for (i, item) in items.enumerated() {
                guard let s = r.string(item, path: "\(p)[\(i)]") else { continue }
                if Self.isHostPattern(s) {
                    c.allowedHosts.append(s.lowercased())
                } else {
                    r.problem("\(p)[\(i)]", item, "\"\(s)\" is not a host name or a *.domain pattern")
                }
            }
        },
        .init(
            "registration", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(false)
        ) { c, n, p, r in
            if let b = r.bool(n, path: p) { c.registration = b }
        },
        .init(
            "registration_rate_limit", type: "a `rate_limits:` name or list of names with `key: ip`",
            default: "20 an hour per address, 5 at once", by: "ConfigParser.authorizationServer"),
        .init("ca_file", type: "path of a PEM CA bundle", default: "the system's") { c, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            if FileManager.default.isReadableFile(atPath: full) {
                c.caFile = full
            } else {
                r.problem(p, n, "cannot read \(full)")
            }
        }
    ])

    static let idJAGKeyTable = ConfigKeyTable<[String], ConfigReader>([
        .init(
            "issuers", type: "list of `issuers:` names", default: "none: required",
            by: "ConfigParser.authorizationServer")
    ])

    /// `host`, `*.domain`, or an IP literal: letters, digits, `-`, `.`, `:` (IPv6), a leading `*.`.
    static func isHostPattern(_ s: String) -> Bool {
        let body = s.hasPrefix("*.") ? String(s.dropFirst(2)) : s
        guard !body.isEmpty, body.count <= 253, !body.hasPrefix("."), !body.hasSuffix("."), !body.contains("*") else {
            return false
        }
        return body.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "."
                || $0 == ":"
        }
    }
}

extension GatewayConfig {
    /// Every client that logs browsers in: those `auth: login` routes list, and the
    /// authorization server's `login`.
    var browserLoginClients: Set<String> {
        var names = Set(routes.flatMap { $0.options.auth.loginRoute?.clients ?? [] })
        if let login = authorizationServer?.login { names.insert(login) }
        return names
    }
}
