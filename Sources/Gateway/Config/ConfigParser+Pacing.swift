import Yams

/// The keys that keep slow clients from pinning upstream connections: a request body's
/// total deadline and minimum rate (`limits`; each upstream's connection cap and its bounded
/// wait queue are in `UpstreamConfig.keyTable`). docs/proxy.md ("Limits") says what each
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
}
