import Foundation
import JOSE

/// `/status.json`: the report as one JSON object, members in a fixed order. Times are RFC 3339
/// UTC strings; absent values are `null`, so every member is always there.
extension StatusReport {
    var json: String {
        var top = JSONObject()
        top["version"] = .string(version)
        top["generated_at"] = Self.timestamp(generatedAt)
        top["started_at"] = Self.timestamp(startedAt)
        top["uptime_seconds"] = Self.number(Int(max(0, uptime)))
        top["config"] = .object(configJSON)
        top["routes"] = .array(routes.map { .object(Self.json($0)) })
        top["issuers"] = .array(issuers.map { .object(Self.json($0)) })
        top["upstreams"] = .array(upstreams.map { .object(Self.json($0)) })
        top["recent_window_seconds"] = Self.number(RecentCount.minutes * 60)
        top["store"] = .object(storeJSON)
        for section in moduleSections { top[section.name] = section.json }
        top["certificates"] = certificatesJSON
        top["tunnels"] = .object(JSONObject(["open": Self.number(tunnelsOpen)]))
        top["connections"] = .object(
            JSONObject(["clients": Self.number(clientConnections), "requests_in_flight": Self.number(inflight)]))
        return JSONSerializer.serialize(.object(top)) + "\n"
    }

    private var configJSON: JSONObject {
        var o = JSONObject()
        o["generation"] = Self.number(history.generation)
        o["loaded_at"] = Self.timestamp(history.loadedAt)
        o["worker_generations"] = .array(workerGenerations.map(Self.number))
        o["reloads"] = .array(
            history.reloads.reversed().map { r in
                .object(
                    JSONObject([
                        "time": Self.timestamp(r.time), "outcome": .string(r.outcome.rawValue),
                        "generation": Self.number(r.generation), "restart_needed": .bool(r.restartNeeded),
                        "problems": .array(r.problems.map(JSONValue.string))
                    ]))
            })
        return o
    }

    private static func json(_ r: Route) -> JSONObject {
        JSONObject([
            "name": .string(r.name), "host": r.host.map(JSONValue.string) ?? .null, "path": .string(r.path),
            "match": .string(r.match), "methods": .array(r.methods.map(JSONValue.string)),
            "upstream": .string(r.upstream), "auth": .string(r.auth),
            "issuers": .array(r.issuers.map(JSONValue.string)), "clients": .array(r.clients.map(JSONValue.string)),
            "requests": .object(
                JSONObject(["total": classes(r.answers.total), "recent": classes(r.answers.recent)]))
        ])
    }

    /// `{"1xx": n, "2xx": n, "3xx": n, "4xx": n, "5xx": n}`, every class always there.
    private static func classes(_ counts: [Int]) -> JSONValue {
        var o = JSONObject()
        for (i, n) in counts.enumerated() { o["\(i + 1)xx"] = number(n) }
        return .object(o)
    }

    private static func json(_ i: Issuer) -> JSONObject {
        JSONObject([
            "name": .string(i.name), "issuer": .string(i.issuer), "keys_from": .string(i.keysFrom),
            "introspection": .bool(i.introspection), "keys_loaded": .bool(i.keys.loaded),
            "key_ids": .array(i.keys.keyIDs.map(JSONValue.string)), "last_fetch": timestamp(i.keys.lastFetch),
            "failing": .bool(i.keys.failing), "fetch_failures": number(i.keys.failures),
            "last_error": i.keys.lastError.map { .string($0.error) } ?? .null,
            "last_error_at": timestamp(i.keys.lastError?.at)
        ])
    }

    private static func json(_ u: Upstream) -> JSONObject {
        JSONObject([
            "name": .string(u.name), "url": .string(u.url), "idle_connections": number(u.pool.idle),
            "active_connections": number(u.pool.active), "recent_5xx": number(u.pool.recent5xx),
            "total_5xx": number(u.pool.total5xx), "recent_failures": number(u.pool.recentFailures),
            "total_failures": number(u.pool.totalFailures)
        ])
    }

    private var storeJSON: JSONObject {
        switch store {
        case .memory:
            return JSONObject(["kind": .string("memory")])
        case .redis(let deployment, let up, let role, let latency, let lastError, let checkedAt):
            return JSONObject([
                "kind": .string("redis"), "deployment": .string(deployment), "up": .bool(up),
                "role": role.map(JSONValue.string) ?? .null,
                "latency_ms": latency.map { .number(String(format: "%.3f", $0 * 1000)) } ?? .null,
                "last_error": lastError.map(JSONValue.string) ?? .null, "checked_at": Self.timestamp(checkedAt)
            ])
        }
    }

    static func number(_ n: Int) -> JSONValue { .number(String(n)) }

    static func timestamp(_ t: Double?) -> JSONValue { t.map { .string(rfc3339($0)) } ?? .null }

    /// `2026-11-25T12:00:10Z` (whole seconds, UTC).
    static func rfc3339(_ t: Double) -> String {
        var seconds = time_t(t.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
