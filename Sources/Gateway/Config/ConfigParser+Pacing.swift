import Yams

/// The keys that keep slow clients from pinning upstream connections: a request body's
/// total deadline and minimum rate (`limits`; each upstream's connection cap and its bounded
/// wait queue are in `UpstreamConfig.keyTable`). docs/proxy.md ("Limits") says what each
/// bounds and why its default is what it is.
extension ConfigParser {
    /// `limits.body_deadline: 10m | off`.
    static func bodyDeadline(_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let s = r.string(n, path: p) else { return }
        if s == "off" {
            l.bodyDeadline = nil
        } else if let v = ConfigValues.duration(s), v >= 1 {
            l.bodyDeadline = v
        } else {
            r.problem(p, n, "must be a duration of at least 1s (e.g. 10m), or off")
        }
    }

    /// `limits.body_min_rate: 1KB/s | off`.
    static func bodyMinRate(_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let s = r.string(n, path: p) else { return }
        if let v = minRate(s) {
            l.bodyMinRate = v
        } else {
            r.problem(p, n, "must be a size per second up to 1GB/s (e.g. 1KB/s), or off")
        }
    }

    /// `limits.body_min_rate_grace: 5s`.
    static func bodyMinRateGrace(_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let v = r.duration(n, path: p) else { return }
        if v < 0.1 || v > 3600 {
            r.problem(p, n, "must be from 100ms to 1h (e.g. 5s)")
        } else {
            l.bodyMinRateGrace = v
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
