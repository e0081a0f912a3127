import Foundation
import Yams

extension AuthorizerConfig {
    /// The keys of an `authorizers.NAME` entry, each said once: its reference row (checked by
    /// ConfigReferenceTests) and its reader.
    static let keyTable = ConfigKeyTable<AuthorizerConfig, ConfigContext>([
        .init(
            "url", type: "`http(s)` URL: the PDP's base", default: "none: required",
            reader: .always { x, n, p, c in
                guard let n else {
                    return c.r.problem(p, nil, "is required: the PDP's base URL, e.g. https://pdp.internal/")
                }
                guard let s = c.r.string(n, path: p) else { return }
                guard let url = URL(string: s), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                    url.host?.isEmpty == false, url.query == nil, url.fragment == nil
                else { return c.r.problem(p, n, "must be an http or https URL with a host, and no query or fragment") }
                x.url = s.hasSuffix("/") ? s : s + "/"
            }),
        .init(
            "auth", type: "`none`, `{ bearer_file: PATH }` or `{ client: NAME, scope, token_endpoint }`",
            default: "`none`"
        ) { x, n, p, c in
            if case .scalar = n {
                if let s = c.r.string(n, path: p), s != "none" {
                    c.r.problem(p, n, "must be none or a mapping: { bearer_file: PATH } or { client: NAME }")
                }
            } else if let f = c.r.mapping(n, path: p, section: .authorizerAuth) {
                var d = AuthorizerAuthDraft()
                authKeyTable.read(f, into: &d, path: p, c.r)
                x.auth = ConfigParser.authorizerAuth(d, path: p, c)
            }
        },
        .init(
            "timeout", type: "duration (at most `10s`)", default: "`300ms`", checkedBy: ConfigDefault.duration(0.3)
        ) { x, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v > 0 && v <= 10 { x.timeout = v } else { c.r.problem(p, n, "must be above 0 and at most 10s") }
        },
        .init("cache", type: "mapping (below)", default: "each key's default") { x, n, p, c in
            guard let f = c.r.mapping(n, path: p, section: .authorizerCache) else { return }
            cacheKeyTable.read(f, into: &x.cache, path: p, c.r)
        },
        .init(
            "on_error", type: "`deny` or `unavailable`", default: "`deny`",
            checkedBy: ConfigDefault.text(AuthorizerOnError.deny.rawValue)
        ) { x, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            if let v = AuthorizerOnError(rawValue: s) {
                x.onError = v
            } else {
                c.r.problem(p, n, "must be deny or unavailable")
            }
        },
        .init("subject", type: "mapping (below)", default: "each key's default") { x, n, p, c in
            guard let f = c.r.mapping(n, path: p, section: .authorizerSubject) else { return }
            subjectKeyTable.read(f, into: &x.subject, path: p, c.r)
        },
        .init("query", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(false)) { x, n, p, c in
            if let v = c.r.bool(n, path: p) { x.query = v }
        },
        .init("ca_file", type: "path of a PEM CA bundle", default: "the system's CA bundle") { x, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            x.caFile = s.hasPrefix("/") ? s : "\(c.r.baseDirectory)/\(s)"
        }
    ])

    /// `authorizers.NAME.cache`.
    static let cacheKeyTable = ConfigKeyTable<AuthorizerCache, ConfigReader>([
        .init("allow_ttl", type: "duration", default: "`10s`", checkedBy: ConfigDefault.duration(10)) { x, n, p, r in
            if let v = r.duration(n, path: p) { x.allowTTL = v }
        },
        .init("deny_ttl", type: "duration", default: "`2s`", checkedBy: ConfigDefault.duration(2)) { x, n, p, r in
            if let v = r.duration(n, path: p) { x.denyTTL = v }
        },
        .init(
            "max_entries", type: "number (0: no cache)", default: "`100000`", checkedBy: ConfigDefault.number(100_000)
        ) { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Int(s), v >= 0, v <= 10_000_000 {
                x.maxEntries = v
            } else {
                r.problem(p, n, "must be 0 to 10000000")
            }
        }
    ])

    /// `authorizers.NAME.subject`.
    static let subjectKeyTable = ConfigKeyTable<AuthorizerSubject, ConfigReader>([
        .init("type", type: "string", default: "`identity`", checkedBy: ConfigDefault.text("identity")) { x, n, p, r in
            if let s = r.string(n, path: p) {
                if s.isEmpty { r.problem(p, n, "must not be empty") } else { x.type = s }
            }
        },
        .init("id", type: "claim name", default: "`sub`", checkedBy: ConfigDefault.text("sub")) { x, n, p, r in
            if let s = r.string(n, path: p) {
                if s.isEmpty { r.problem(p, n, "must not be empty") } else { x.idClaim = s }
            }
        },
        .init("properties", type: "list of claim names", default: "none") { x, n, p, r in
            guard let list = r.sequence(n, path: p) else { return }
            x.properties = list.enumerated().compactMap { i, item in r.string(item, path: "\(p)[\(i)]") }
        }
    ])

    /// `authorizers.NAME.auth` as a mapping, read into a `AuthorizerAuthDraft` (a grant's keys
    /// by the rows of `UpstreamCredentialsConfig.grantKeyTable`).
    static let authKeyTable = ConfigKeyTable<AuthorizerAuthDraft, ConfigReader>([
        .init("bearer_file", type: "path of a file holding a token", default: "none") { d, n, p, r in
            d.bearerFile = n
            guard let s = r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard FileManager.default.isReadableFile(atPath: full) else {
                r.problem(p, n, "cannot read \(full)")
                return
            }
            d.auth = .bearerFile(full)
        },
        UpstreamCredentialsConfig.grantClient.lifted(into: \.grant, type: "name of a `clients` entry", default: "none"),
        UpstreamCredentialsConfig.grantScope.lifted(
            into: \.grant, type: "space-separated scopes", default: "none: the client's default"),
        UpstreamCredentialsConfig.grantTokenEndpoint.lifted(
            into: \.grant, type: "http(s) URL", default: "the client's issuer's metadata")
    ])
}

/// `authorizers.NAME.auth` as its table reads it: a bearer file read, a grant's keys as given.
struct AuthorizerAuthDraft {
    var auth = AuthorizerAuth.none
    var bearerFile: Node?
    var grant = ClientCredentialsDraft()
}

extension ConfigParser {
    /// `authorizers:`: named PDPs, by name.
    static func authorizers(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: AuthorizerConfig] {
        guard let node, let m = r.mapping(node, path: "authorizers", section: nil) else { return [:] }
        let context = ConfigContext(cfg: cfg, r: r)
        var all: [String: AuthorizerConfig] = [:]
        for (name, entry) in m {
            let p = "authorizers.\(name)"
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                r.problem(p, entry, "an authorizer's name must be printable characters without spaces")
                continue
            }
            guard let fields = r.mapping(entry, path: p, section: .authorizer) else { continue }
            var a = AuthorizerConfig(name: name)
            AuthorizerConfig.keyTable.read(fields, into: &a, path: p, context)
            // The URL's row said why there is none.
            guard !a.url.isEmpty else { continue }
            all[name] = a
        }
        return all
    }

    /// `auth: { bearer_file }` or `{ client: NAME, scope, token_endpoint }`: for a client, a
    /// `clients:` entry with an issuer, whose token endpoint is given or comes from that
    /// issuer's metadata (the same grant as an upstream's `client_credentials`).
    static func authorizerAuth(_ d: AuthorizerAuthDraft, path p: String, _ c: ConfigContext) -> AuthorizerAuth {
        guard let client = d.grant.client else {
            for (key, n) in [("scope", d.grant.scopeNode), ("token_endpoint", d.grant.tokenEndpoint?.node)] {
                guard let n else { continue }
                c.r.problem("\(p).\(key)", n, "goes with client: NAME")
            }
            return d.auth
        }
        if d.bearerFile != nil { c.r.problem(p, client.node, "give bearer_file or client, not both") }
        guard
            let grant = credentialsGrant(
                d.grant, node: client.node, clients: c.cfg.clients, issuers: c.cfg.issuers, path: p, c.r)
        else { return d.auth }
        return .client(grant)
    }
}
