import JOSE

/// When each key (by set, then id) last admitted a request: one worker's, or the latest of
/// all of theirs.
struct APIKeyUse: ModuleStatus {
    var lastUse: [String: [String: Double]] = [:]

    mutating func add(_ other: APIKeyUse) {
        lastUse.merge(other.lastUse) { $0.merging($1, uniquingKeysWith: max) }
    }

    /// The workers' part alone: the keys themselves are the main loop's (`APIKeys.statusSection`).
    func section(_ config: GatewayConfig) -> StatusSection? { APIKeySection([:], lastUse: lastUse, now: 0).section }
}

/// The status page's key sets: each key by its public id, with its caller, its validity and
/// when it last admitted a request in this process. Never a key, never a digest.
struct APIKeySection {
    struct Row: Sendable {
        var id: String
        var sub: String
        var clientID: String?
        var notBefore: Int64?
        var expires: Int64?
        /// Wall-clock seconds; nil: not since the process started.
        var lastUse: Double?
    }

    let sets: [(set: String, keys: [Row])]
    /// When the page is made: a key past its expiry shows as such.
    let now: Double

    init(_ entries: [String: [APIKeyEntry]], lastUse: [String: [String: Double]], now: Double) {
        self.now = now
        sets = entries.keys.sorted().map { set in
            let rows = (entries[set] ?? []).map { e in
                Row(
                    id: e.id, sub: e.sub, clientID: e.clientID, notBefore: e.notBefore, expires: e.expires,
                    lastUse: lastUse[set]?[e.id])
            }
            return (set, rows)
        }
    }

    var section: StatusSection { StatusSection(name: "api_keys", json: json, html: html) }

    var html: String {
        guard !sets.isEmpty else { return "" }
        let e = LoginPages.escape
        var out = "<h2>API keys</h2><table id=\"api-keys\"><tr><th>Set</th><th>Id</th><th>Caller</th>"
        out += "<th>Valid from</th><th>Expires</th><th>Last used</th></tr>"
        for (set, keys) in sets {
            for k in keys {
                let caller = k.sub + (k.clientID.map { " (\($0))" } ?? "")
                let from = k.notBefore.map { APIKeyFile.text($0) } ?? "—"
                let expired = k.expires.map { Double($0) <= now } ?? false
                let until = k.expires.map { APIKeyFile.text($0) } ?? "never"
                let used = k.lastUse.map { StatusReport.timestamp($0).string ?? "" } ?? "not since the start"
                out += "<tr><td>\(e(set))</td><td>\(e(k.id))</td><td>\(e(caller))</td><td>\(e(from))</td>"
                out += "<td\(expired ? " class=\"bad\"" : "")>\(e(until))</td><td>\(e(used))</td></tr>"
            }
        }
        return out + "</table>"
    }

    var json: JSONValue {
        .array(
            sets.map { set, keys in
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
                                        "last_used": k.lastUse.map(StatusReport.timestamp) ?? .null
                                    ]))
                            })
                    ]))
            })
    }
}
