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
    /// The keys of `authorization_server`, each said once with its reference row and read in
    /// this order into a draft; `ConfigParser.authorizationServer` then holds consent to the
    /// client hosts. Rows that name other sections (`login`, `id_jag`, the registration
    /// limits) read them from the config read so far.
    static let keyTable = ConfigKeyTable<AuthorizationServerDraft, ConfigContext>([
        .init(
            "issuer", type: "https URL (http only for a loopback host)", default: "the first `public_url`",
            reader: .always { d, n, p, c in
                guard let n else {
                    if let first = c.cfg.publicURLs.first {
                        d.server.issuer = "\(first.scheme)://\(first.authority)"
                    } else {
                        c.r.problem(p, d.node, "is required when there is no public_url")
                    }
                    return
                }
                guard let s = c.r.string(n, path: p) else { return }
                guard TransmitterConfig.securedURL(s) != nil else {
                    c.r.problem(p, n, "\"\(s)\" is not an https URL (http only for a loopback host)")
                    return
                }
                d.server.issuer = s.hasSuffix("/") ? String(s.dropLast()) : s
            }),
        .init(
            "signing_keys", type: "list of private key files (JWK or PEM); the first signs", default: "none: required",
            reader: .always { d, n, p, c in
                guard let n else {
                    c.r.problem(p, d.node, "is required: the keys the access tokens are signed with")
                    return
                }
                d.server.signingKeys = ConfigParser.signingKeys(n, path: p, c.r)
            }),
        .init(
            "access_token_ttl", type: "duration, 1m to 1h", default: "`10m`",
            checkedBy: ConfigDefault.duration(AuthorizationServerConfig().accessTokenTTL)
        ) { d, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v < 60 || v > 3600 { c.r.problem(p, n, "must be from 1m to 1h") } else { d.server.accessTokenTTL = v }
        },
        .init("login", type: "a `clients:` name", default: "none: only the ID-JAG grant") { d, n, p, c in
            guard let name = c.r.string(n, path: p) else { return }
            // Users sign in through the existing login: a client with an issuer to send them to.
            if let client = c.cfg.clients[name], client.issuer != nil {
                d.server.login = name
            } else {
                c.r.problem(
                    p, n,
                    "\"\(name)\" is not a login client (a clients: entry with an issuer); defined: \(c.cfg.clients.keys.sorted().joined(separator: ", "))"
                )
            }
        },
        .init(
            "refresh_token_ttl", type: "duration, 5m to 90d", default: "`24h`",
            checkedBy: ConfigDefault.duration(AuthorizationServerConfig().refreshTokenTTL)
        ) { d, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v < 300 || v > 90 * 86_400 {
                c.r.problem(p, n, "must be from 5m to 90d")
            } else {
                d.server.refreshTokenTTL = v
            }
        },
        .init("consent", type: "bool", default: "`true`", checkedBy: ConfigDefault.bool(true)) { d, n, p, c in
            d.consent = n
            if let b = c.r.bool(n, path: p) { d.server.consent = b }
        },
        .init(
            "consent_ttl", type: "duration, 1h to 365d", default: "`30d`",
            checkedBy: ConfigDefault.duration(AuthorizationServerConfig().consentTTL)
        ) { d, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v < 3600 || v > 365 * 86_400 {
                c.r.problem(p, n, "must be from 1h to 365d")
            } else {
                d.server.consentTTL = v
            }
        },
        .init(
            "scopes", type: "mapping: a scope to `{}` or a `require`-style rule on the user's claims",
            default: "none: required",
            reader: .always { d, n, p, c in
                guard let n else {
                    c.r.problem(p, d.node, "is required: the scopes a user may be granted")
                    return
                }
                d.server.scopes = ConfigParser.grantableScopes(n, path: p, c.r)
            }),
        .init("clients", type: "mapping (below)", default: "metadata documents from any public host") { d, n, p, c in
            guard let m = c.r.mapping(n, path: p, section: .asClients) else { return }
            AuthorizationServerConfig.clientsKeyTable.read(m, into: &d.server.clients, path: p, c)
        },
        .init("id_jag", type: "`{ issuers: [NAME, …] }`", default: "none: no ID-JAG is taken") { d, n, p, c in
            guard let m = c.r.mapping(n, path: p, section: .asIDJAG) else { return }
            var issuers: [String]?
            AuthorizationServerConfig.idJAGKeyTable.read(m, into: &issuers, path: p, c)
            if let issuers {
                d.server.identityAssertionIssuers = issuers
            } else {
                c.r.problem("\(p).issuers", n, "is required")
            }
        }
    ])

    static let clientsKeyTable = ConfigKeyTable<Clients, ConfigContext>([
        .init(
            "allowed_client_hosts", type: "list of host names or `*.domain` patterns", default: "any public host"
        ) { cl, n, p, x in
            guard let items = x.r.sequence(n, path: p) else { return }
            for (i, item) in items.enumerated() {
                guard let s = x.r.string(item, path: "\(p)[\(i)]") else { continue }
                if Self.isHostPattern(s) {
                    cl.allowedHosts.append(s.lowercased())
                } else {
                    x.r.problem("\(p)[\(i)]", item, "\"\(s)\" is not a host name or a *.domain pattern")
                }
            }
        },
        .init(
            "registration", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(false)
        ) { cl, n, p, x in
            if let b = x.r.bool(n, path: p) { cl.registration = b }
        },
        .init(
            "registration_rate_limit", type: "a `rate_limits:` name or list of names with `key: ip`",
            default: "20 an hour per address, 5 at once"
        ) { cl, n, p, x in
            // By address only: whoever registers has no identity yet, and a header is theirs to vary.
            cl.registrationLimits = ConfigParser.rateLimitPolicies(n, path: p, defined: x.cfg.rateLimits, x.r).filter {
                guard $0.key == .ip else {
                    x.r.problem(p, n, "\"\($0.name)\" counts by \($0.key.text): registrations are counted by ip")
                    return false
                }
                return true
            }
        },
        .init("ca_file", type: "path of a PEM CA bundle", default: "the system's") { cl, n, p, x in
            guard let s = x.r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(x.r.baseDirectory)/\(s)"
            if FileManager.default.isReadableFile(atPath: full) {
                cl.caFile = full
            } else {
                x.r.problem(p, n, "cannot read \(full)")
            }
        }
    ])

    /// `id_jag:` read into the names of the issuers whose ID-JAGs are taken (nil: `issuers`
    /// not given).
    static let idJAGKeyTable = ConfigKeyTable<[String]?, ConfigContext>([
        .init("issuers", type: "list of `issuers:` names", default: "none: required") { issuers, list, p, c in
            issuers = []
            for (i, name) in ConfigParser.exchangeNames(list, path: p, c.r).enumerated() {
                if c.cfg.issuers[name] == nil {
                    c.r.problem(
                        "\(p)[\(i)]", list,
                        "\"\(name)\" is not defined; defined: \(c.cfg.issuers.keys.sorted().joined(separator: ", "))")
                } else {
                    issuers?.append(name)
                }
            }
        }
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

/// `authorization_server` as its table reads it: the server, and what its checks point at.
struct AuthorizationServerDraft {
    var server = AuthorizationServerConfig()
    /// The section itself: where a missing key's problem points.
    let node: Node
    var consent: Node?
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
