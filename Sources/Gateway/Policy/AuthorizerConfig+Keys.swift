import Foundation
import Yams

extension AuthorizerConfig {
    /// The keys of an `authorizers.NAME` entry, each said once: its reference row (checked by
    /// ConfigReferenceTests) and its reader.
    static let keyTable = ConfigKeyTable<AuthorizerConfig, ConfigReader>([
        .init(
            "url", type: "`http(s)` URL: the PDP's base", default: "none: required",
            reader: .always { x, n, p, r in
                guard let n else {
                    return r.problem(p, nil, "is required: the PDP's base URL, e.g. https://pdp.internal/")
                }
                guard let s = r.string(n, path: p) else { return }
                guard let url = URL(string: s), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                    url.host?.isEmpty == false, url.query == nil, url.fragment == nil
                else { return r.problem(p, n, "must be an http or https URL with a host, and no query or fragment") }
                x.url = s.hasSuffix("/") ? s : s + "/"
            }),
        .init(
            "auth", type: "`none`, `{ bearer_file: PATH }` or `{ client: NAME, scope, token_endpoint }`",
            default: "`none`", by: "ConfigParser.authorizers"),
        .init(
            "timeout", type: "duration (at most `10s`)", default: "`300ms`", checkedBy: ConfigDefault.duration(0.3)
        ) { x, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v > 0 && v <= 10 { x.timeout = v } else { r.problem(p, n, "must be above 0 and at most 10s") }
        },
        .init("cache", type: "mapping (below)", default: "each key's default") { x, n, p, r in
            guard let f = r.mapping(n, path: p, section: .authorizerCache) else { return }
            cacheKeyTable.read(f, into: &x.cache, path: p, r)
        },
        .init(
            "on_error", type: "`deny` or `unavailable`", default: "`deny`",
            checkedBy: ConfigDefault.text(AuthorizerOnError.deny.rawValue)
        ) { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = AuthorizerOnError(rawValue: s) {
                x.onError = v
            } else {
                r.problem(p, n, "must be deny or unavailable")
            }
        },
        .init("subject", type: "mapping (below)", default: "each key's default") { x, n, p, r in
            guard let f = r.mapping(n, path: p, section: .authorizerSubject) else { return }
            subjectKeyTable.read(f, into: &x.subject, path: p, r)
        },
        .init("query", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(false)) { x, n, p, r in
            if let v = r.bool(n, path: p) { x.query = v }
        },
        .init("ca_file", type: "path of a PEM CA bundle", default: "the system's CA bundle") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            x.caFile = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
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

    /// `authorizers.NAME.auth` as a mapping.
    static let authKeyTable = ConfigKeyTable<AuthorizerConfig, ConfigReader>([
        .init("bearer_file", type: "path of a file holding a token", default: "none") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard FileManager.default.isReadableFile(atPath: full) else {
                r.problem(p, n, "cannot read \(full)")
                return
            }
            x.auth = .bearerFile(full)
        },
        .init("client", type: "name of a `clients` entry", default: "none", by: "ConfigParser.authorizers"),
        .init(
            "scope", type: "space-separated scopes", default: "none: the client's default",
            by: "ConfigParser.authorizers"),
        .init(
            "token_endpoint", type: "http(s) URL", default: "the client's issuer's metadata",
            by: "ConfigParser.authorizers")
    ])
}

extension ConfigParser {
    /// `authorizers:`: named PDPs, by name.
    static func authorizers(
        _ node: Node?, clients: [String: ClientConfig], issuers: [String: IssuerConfig], _ r: ConfigReader
    ) -> [String: AuthorizerConfig] {
        guard let node, let m = r.mapping(node, path: "authorizers", section: nil) else { return [:] }
        var all: [String: AuthorizerConfig] = [:]
        for (name, entry) in m {
            let p = "authorizers.\(name)"
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                r.problem(p, entry, "an authorizer's name must be printable characters without spaces")
                continue
            }
            guard let fields = r.mapping(entry, path: p, section: .authorizer) else { continue }
            var a = AuthorizerConfig(name: name)
            AuthorizerConfig.keyTable.read(fields, into: &a, path: p, r)
            // The URL's row said why there is none.
            guard !a.url.isEmpty else { continue }
            if let n = fields["auth"] {
                if case .scalar = n {
                    if let s = r.string(n, path: "\(p).auth"), s != "none" {
                        r.problem(
                            "\(p).auth", n, "must be none or a mapping: { bearer_file: PATH } or { client: NAME }")
                    }
                } else if let f = r.mapping(n, path: "\(p).auth", section: .authorizerAuth) {
                    AuthorizerConfig.authKeyTable.read(f, into: &a, path: "\(p).auth", r)
                    authorizerClient(f, into: &a, clients: clients, issuers: issuers, path: "\(p).auth", r)
                }
            }
            all[name] = a
        }
        return all
    }
}

extension ConfigParser {
    /// `auth: { client: NAME, scope, token_endpoint }`: a `clients:` entry with an issuer,
    /// whose token endpoint is given or comes from that issuer's metadata.
    fileprivate static func authorizerClient(
        _ f: [String: Node], into a: inout AuthorizerConfig, clients: [String: ClientConfig],
        issuers: [String: IssuerConfig], path p: String, _ r: ConfigReader
    ) {
        guard let n = f["client"] else {
            for key in ["scope", "token_endpoint"] where f[key] != nil {
                r.problem("\(p).\(key)", f[key], "goes with client: NAME")
            }
            return
        }
        if f["bearer_file"] != nil { r.problem(p, n, "give bearer_file or client, not both") }
        // The same grant as an upstream's `client_credentials` and a transmitter's `auth`.
        if let grant = credentialsGrant(f, node: n, clients: clients, issuers: issuers, path: p, r) {
            a.auth = .client(grant)
        }
    }
}
