import JOSE

/// The status page's key sets: each key by its public id, with its caller, its validity and
/// when it last admitted a request in this process. Never a key, never a digest.
extension StatusReport {
    struct APIKeyRow: Sendable {
        var id: String
        var sub: String
        var clientID: String?
        var notBefore: Int64?
        var expires: Int64?
        /// Wall-clock seconds; nil: not since the process started.
        var lastUse: Double?
    }

    static func apiKeyRows(_ entries: [String: [APIKeyEntry]], lastUse: [String: [String: Double]]) -> [(
        set: String, keys: [APIKeyRow]
    )] {
        entries.keys.sorted().map { set in
            let rows = (entries[set] ?? []).map { e in
                APIKeyRow(
                    id: e.id, sub: e.sub, clientID: e.clientID, notBefore: e.notBefore, expires: e.expires,
                    lastUse: lastUse[set]?[e.id])
            }
            return (set, rows)
        }
    }

    var apiKeysSection: String {
        guard !apiKeySets.isEmpty else { return "" }
        let e = LoginPages.escape
        var out = "<h2>API keys</h2><table id=\"api-keys\"><tr><th>Set</th><th>Id</th><th>Caller</th>"
        out += "<th>Valid from</th><th>Expires</th><th>Last used</th></tr>"
        for (set, keys) in apiKeySets {
            for k in keys {
                let caller = k.sub + (k.clientID.map { " (\($0))" } ?? "")
                let from = k.notBefore.map { APIKeyFile.text($0) } ?? "—"
                let expired = k.expires.map { Double($0) <= generatedAt } ?? false
                let until = k.expires.map { APIKeyFile.text($0) } ?? "never"
                let used = k.lastUse.map { Self.timestamp($0).string ?? "" } ?? "not since the start"
                out += "<tr><td>\(e(set))</td><td>\(e(k.id))</td><td>\(e(caller))</td><td>\(e(from))</td>"
                out += "<td\(expired ? " class=\"bad\"" : "")>\(e(until))</td><td>\(e(used))</td></tr>"
            }
        }
        return out + "</table>"
    }

    var apiKeysJSON: JSONValue {
        .array(
            apiKeySets.map { set, keys in
                .object(
                    JSONObject([
                        "name": .string(set),
                        "keys": .array(
                            keys.map { k in
                                .object(
                                    JSONObject([
                                        "id": .string(k.id), "sub": .string(k.sub),
                                        "client_id": k.clientID.map(JSONValue.string) ?? .null,
                                        "not_before": k.notBefore.map { .string(APIKeyFile.text($0)) } ?? .null,
                                        "expires": k.expires.map { .string(APIKeyFile.text($0)) } ?? .null,
                                        "last_used": k.lastUse.map(Self.timestamp) ?? .null
                                    ]))
                            })
                    ]))
            })
    }
}
