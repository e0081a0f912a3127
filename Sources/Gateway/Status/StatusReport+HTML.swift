import Foundation

/// `/status`: the report as one self-contained HTML page — inline style, no script, no
/// external asset (the admin answers' CSP allows none) — every value from the config or a
/// peer escaped (`LoginPages.escape`): a route name is config text and may hold markup.
extension StatusReport {
    var html: String {
        var out = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>tokengate status</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:2em;color:#222}
            h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
            table{border-collapse:collapse;margin:.4em 0}
            th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
            th{background:#f2f2f2}.bad{color:#b00020;font-weight:bold}.ok{color:#176f2c}
            code{font-size:.95em}
            </style></head><body>
            """
        out += "<h1>tokengate status</h1>"
        out += "<p>Version <code>\(e(version))</code> · generated \(e(Self.rfc3339(generatedAt)))"
        out +=
            " · <span id=\"started\">started \(e(Self.rfc3339(startedAt))), up \(e(Self.duration(uptime)))</span></p>"
        out +=
            configSection + routesSection + issuersSection + upstreamsSection + moduleSections.map(\.html).joined()
        out += storeSection
        out += certificatesSection
        out += "<h2>Connections</h2><table id=\"connections\">" + row("WebSocket tunnels open", "\(tunnelsOpen)")
        out += row("Client connections", "\(clientConnections)") + row("Requests in flight", "\(inflight)") + "</table>"
        return out + "</body></html>\n"
    }

    private var configSection: String {
        var out = "<h2>Configuration</h2><table id=\"config\">"
        out += row("Generation", "\(history.generation)") + row("Loaded", Self.rfc3339(history.loadedAt))
        out += row("Workers on generation", workerGenerations.map(String.init).joined(separator: ", ")) + "</table>"
        out += "<h2>Reloads</h2>"
        if history.reloads.isEmpty { return out + "<p id=\"reloads\">No reload since start.</p>" }
        out += "<table id=\"reloads\"><tr><th>Time</th><th>Outcome</th><th>Generation</th><th>Notes</th></tr>"
        for r in history.reloads.reversed() {
            var notes = r.problems.isEmpty ? "" : "problems at: " + r.problems.joined(separator: "; ")
            if r.restartNeeded { notes += "some changes wait for a restart" }
            let cls = r.outcome == .applied ? "ok" : "bad"
            out += "<tr><td>\(e(Self.rfc3339(r.time)))</td><td class=\"\(cls)\">\(e(r.outcome.rawValue))</td>"
            out += "<td>\(r.generation)</td><td>\(e(notes))</td></tr>"
        }
        return out + "</table>"
    }

    private var routesSection: String {
        let window = "\(RecentCount.minutes) min"
        var out = "<h2>Routes (\(routes.count))</h2><table id=\"routes\"><tr><th>Name</th><th>Host</th><th>Path</th>"
        out += "<th>Methods</th><th>Auth</th><th>Issuers / clients</th><th>Upstream</th>"
        out += "<th>Answers (\(window))</th><th>Answers since start</th></tr>"
        for r in routes {
            let who = (r.issuers + r.clients).joined(separator: ", ")
            out += "<tr><td>\(e(r.name))</td><td>\(e(r.host ?? "any"))</td>"
            out += "<td><code>\(e(r.path))</code> (\(e(r.match)))</td>"
            out += "<td>\(e(r.methods.isEmpty ? "any" : r.methods.joined(separator: " ")))</td><td>\(e(r.auth))</td>"
            out += "<td>\(e(who))</td><td>\(e(r.upstream))</td>"
            out += "<td\(r.answers.recent[4] > 0 ? " class=\"bad\"" : "")>\(Self.classes(r.answers.recent))</td>"
            out += "<td>\(Self.classes(r.answers.total))</td></tr>"
        }
        return out + "</table>"
    }

    /// `2xx 12 · 4xx 3`: the classes that have answers, or `none`.
    private static func classes(_ counts: [Int]) -> String {
        let said = counts.enumerated().filter { $0.element > 0 }.map { "\($0.offset + 1)xx \($0.element)" }
        return said.isEmpty ? "none" : said.joined(separator: " · ")
    }

    /// `3d 4h 5m 6s`, the larger units only when reached.
    static func duration(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        let parts = [(s / 86_400, "d"), (s / 3600 % 24, "h"), (s / 60 % 60, "m"), (s % 60, "s")]
        let first = parts.firstIndex { $0.0 > 0 } ?? 3
        return parts[first...].map { "\($0.0)\($0.1)" }.joined(separator: " ")
    }

    private var issuersSection: String {
        var out = "<h2>Issuers (\(issuers.count))</h2>"
        if issuers.isEmpty { return out + "<p id=\"issuers\">None configured.</p>" }
        out += "<table id=\"issuers\"><tr><th>Name</th><th>Issuer</th><th>Keys from</th><th>Key ids</th>"
        out += "<th>Last fetch</th><th>Last error</th></tr>"
        for i in issuers {
            let kids = i.keys.loaded ? i.keys.keyIDs.joined(separator: ", ") : "not loaded"
            let error = i.keys.lastError.map { "\(Self.rfc3339($0.at)): \($0.error)" } ?? "none"
            out += "<tr><td>\(e(i.name))</td><td>\(e(i.issuer))</td>"
            out += "<td>\(e(i.keysFrom))\(i.introspection ? " + introspection" : "")</td>"
            out += "<td class=\"\(i.keys.loaded ? "ok" : "bad")\">\(e(kids))</td>"
            out += "<td>\(e(i.keys.lastFetch.map(Self.rfc3339) ?? "never"))</td>"
            out += "<td\(i.keys.failing ? " class=\"bad\"" : "")>\(e(error))</td></tr>"
        }
        return out + "</table>"
    }

    private var upstreamsSection: String {
        let window = "\(RecentCount.minutes) min"
        var out = "<h2>Upstreams (\(upstreams.count))</h2><table id=\"upstreams\"><tr><th>Name</th><th>URL</th>"
        out += "<th>Idle</th><th>Active</th><th>5xx (\(window) / total)</th><th>No answer (\(window) / total)</th></tr>"
        for u in upstreams {
            let p = u.pool
            out += "<tr><td>\(e(u.name))</td><td>\(e(u.url))</td><td>\(p.idle)</td><td>\(p.active)</td>"
            out += "<td\(p.recent5xx > 0 ? " class=\"bad\"" : "")>\(p.recent5xx) / \(p.total5xx)</td>"
            out += "<td\(p.recentFailures > 0 ? " class=\"bad\"" : "")>"
            out += "\(p.recentFailures) / \(p.totalFailures)</td></tr>"
        }
        return out + "</table>"
    }

    private var storeSection: String {
        var out = "<h2>Store</h2><table id=\"store\">"
        switch store {
        case .memory:
            out += row("Kind", "memory (this process)")
        case .redis(let deployment, let up, let role, let latency, let lastError, let checkedAt):
            out += row("Kind", "redis") + row("Deployment", deployment)
            out += row("Answers", up ? "yes" : "no", bad: !up) + row("Role", role ?? "unknown")
            out += row("PING latency", latency.map { String(format: "%.3f ms", $0 * 1000) } ?? "-")
            out += row("Last error", lastError ?? "none", bad: lastError != nil)
            out += row("Checked", checkedAt.map(Self.rfc3339) ?? "never")
        }
        return out + "</table>"
    }

    /// A `<th>`/`<td>` row; `value` is escaped.
    private func row(_ name: String, _ value: String, bad: Bool = false) -> String {
        "<tr><th>\(e(name))</th><td\(bad ? " class=\"bad\"" : "")>\(e(value))</td></tr>"
    }

    private func e(_ s: String) -> String { LoginPages.escape(s) }
}
