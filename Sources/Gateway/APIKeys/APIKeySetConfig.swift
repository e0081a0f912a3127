import Foundation
import Yams

/// `api_keys.NAME`: a key set routes name (`api_keys: NAME`, `auth: api_key`). Its file
/// holds digests only (APIKeyFile); it is read at load, where a problem in it is the
/// config's, and again whenever it changes (APIKeyService), where one keeps the last table.
struct APIKeySetConfig: Sendable {
    var name: String
    /// The key file's absolute path.
    var file = ""
    /// The field a key comes in; nil with `scheme`.
    var header: String? = "X-API-Key"
    /// `Authorization: <scheme> <key>` instead of a header of its own. Never the query: a
    /// key in a URL ends up in logs and histories (RFC 6750 §5.3 says the same of tokens).
    var scheme: String?
    /// The entries as read at load.
    var entries: [APIKeyEntry] = []

    /// Fields a key cannot come in.
    static let reservedFields: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "te", "upgrade", "trailer", "keep-alive",
        "proxy-authorization", "proxy-connection", "cookie", "dpop", "forwarded", "via", "expect", "content-type",
        "traceparent", "tracestate"
    ]

    static let keyTable = ConfigKeyTable<APIKeySetConfig, ConfigReader>([
        .init("file", type: "path of a key file (`tokengate api-keys`)", default: "none: required") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            x.file = full
            guard let data = FileManager.default.contents(atPath: full), let text = String(data: data, encoding: .utf8)
            else {
                r.problem(p, n, "cannot read \(full)")
                return
            }
            switch APIKeyFile.parse(text) {
            case .success(let entries): x.entries = entries
            case .failure(let problems):
                for problem in problems.all { r.problem(p, n, "\(full): \(problem)") }
            }
        },
        .init("header", type: "field name", default: "`X-API-Key`") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            guard !s.isEmpty, s.utf8.allSatisfy(HeaderRules.isTokenChar) else {
                r.problem(p, n, "must be a field name (RFC 9110 §5.1)")
                return
            }
            let lower = s.lowercased()
            if lower == "authorization" {
                r.problem(p, n, "say scheme: NAME for keys in the Authorization field")
                return
            }
            // The field is dropped before forwarding, whoever the caller: one the request's
            // framing, routing, cookies or proofs live in cannot be it.
            if APIKeySetConfig.reservedFields.contains(lower) || lower.hasPrefix("x-forwarded-") {
                r.problem(p, n, "\(s) has a meaning of its own; name a field of the key's own (X-API-Key)")
                return
            }
            x.header = s
        },
        .init("scheme", type: "authorization scheme name", default: "none: keys come in `header`") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            guard !s.isEmpty, s.utf8.allSatisfy(HeaderRules.isTokenChar) else {
                r.problem(p, n, "must be an authorization scheme name (RFC 9110 §11.1)")
                return
            }
            if ["bearer", "dpop", "basic"].contains(s.lowercased()) {
                r.problem(p, n, "\(s) is a scheme of its own; name another (ApiKey)")
                return
            }
            x.scheme = s
        }
    ])
}

extension ConfigParser {
    /// `api_keys:`: the key sets by name.
    static func apiKeySets(_ node: Node?, issuers: [String: IssuerConfig], _ r: ConfigReader) -> [String:
        APIKeySetConfig]
    {
        guard let node, let m = r.mapping(node, path: "api_keys", section: nil) else { return [:] }
        var all: [String: APIKeySetConfig] = [:]
        for (name, entry) in m {
            let p = "api_keys.\(name)"
            guard APIKeyEntry.isValidID(name) else {
                r.problem(p, entry, "a key set's name is 1 to 64 of A-Z a-z 0-9 _ -")
                continue
            }
            // A set's name stands where an issuer's would (the caller's voucher in rate-limit
            // keys and overrides, and the access log's `issuer`), so the two must not meet.
            if issuers[name] != nil {
                r.problem(p, entry, "an issuer has this name too; name the key set otherwise")
                continue
            }
            guard let fields = r.mapping(entry, path: p, section: .apiKeySet) else { continue }
            var set = APIKeySetConfig(name: name)
            APIKeySetConfig.keyTable.read(fields, into: &set, path: p, r)
            if fields["file"] == nil { r.problem("\(p).file", entry, "is required") }
            if fields["scheme"] != nil {
                if fields["header"] != nil { r.problem(p, entry, "say header or scheme, not both") }
                set.header = nil
            }
            all[name] = set
        }
        return all
    }
}
