import Yams

/// The keys that keep slow clients from pinning upstream connections: a request body's
/// total deadline and minimum rate (`limits`), and each upstream's connection cap with its
/// bounded wait queue (`upstreams.NAME`). docs/proxy.md ("Limits") says what each
/// bounds and why its default is what it is.
extension ConfigParser {
    /// `limits.body_deadline: 10m | off`, `limits.body_min_rate: 1KB/s | off`,
    /// `limits.body_min_rate_grace: 5s`.
    static func bodyPace(_ m: [String: Node], _ l: inout Limits, _ r: ConfigReader) {
        if let n = m["body_deadline"], let s = r.string(n, path: "limits.body_deadline") {
            if s == "off" {
                l.bodyDeadline = nil
            } else if let v = ConfigValues.duration(s), v >= 1 {
                l.bodyDeadline = v
            } else {
                r.problem("limits.body_deadline", n, "must be a duration of at least 1s (e.g. 10m), or off")
            }
        }
        if let n = m["body_min_rate"], let s = r.string(n, path: "limits.body_min_rate") {
            if let v = minRate(s) {
                l.bodyMinRate = v
            } else {
                r.problem(
                    "limits.body_min_rate", n,
                    "must be a size per second up to 1GB/s (e.g. 1KB/s), or off")
            }
        }
        if let n = m["body_min_rate_grace"], let v = r.duration(n, path: "limits.body_min_rate_grace") {
            if v < 0.1 || v > 3600 {
                r.problem("limits.body_min_rate_grace", n, "must be from 100ms to 1h (e.g. 5s)")
            } else {
                l.bodyMinRateGrace = v
            }
        }
    }

    /// "1KB/s" → 1024; "off" or "0" → 0; nil: not a rate.
    static func minRate(_ text: String) -> Int? {
        if text == "off" || text == "0" { return 0 }
        guard text.hasSuffix("/s"), let v = ConfigValues.size(String(text.dropLast(2))), v <= 1 << 30 else {
            return nil
        }
        return v
    }

    /// `upstreams.NAME.max_connections: 1024`, `max_pending: 1024`, `pending_timeout: 5s`.
    static func upstreamCap(_ u: [String: Node], path p: String, _ up: inout UpstreamConfig, _ r: ConfigReader) {
        if let n = u["max_connections"], let s = r.string(n, path: "\(p).max_connections") {
            if let v = Int(s), v >= 1, v <= 1_000_000 {
                up.maxConnections = v
            } else {
                r.problem("\(p).max_connections", n, "must be a number from 1 to 1000000")
            }
        }
        if let n = u["max_pending"], let s = r.string(n, path: "\(p).max_pending") {
            if let v = Int(s), v >= 0, v <= 1_000_000 {
                up.maxPending = v
            } else {
                r.problem("\(p).max_pending", n, "must be a number from 0 (no queue: 503 at the cap) to 1000000")
            }
        }
        if let n = u["pending_timeout"], let v = r.duration(n, path: "\(p).pending_timeout") {
            if v < 0.001 || v > 300 {
                r.problem("\(p).pending_timeout", n, "must be from 1ms to 300s (e.g. 5s)")
            } else {
                up.pendingTimeout = v
            }
        }
    }
}
