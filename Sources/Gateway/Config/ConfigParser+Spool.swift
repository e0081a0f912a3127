import Foundation
import Yams

/// `limits.response_buffer`, `request_buffer`, `response_spool_max`, `spool_total`,
/// `request_spool_total`, `request_spool_per_client` and `spool_dir`: proxy buffering for slow
/// clients (ResponseSpool, RequestBufferingStage).
extension ConfigParser {
    /// `response_buffer`, `request_buffer`: 4KB to 16MB.
    static func buffer(_ keyPath: WritableKeyPath<Limits, Int> & Sendable)
        -> @Sendable (_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) -> Void
    {
        { l, n, p, r in
            guard let v = r.size(n, path: p) else { return }
            if v < 4 << 10 || v > 16 << 20 {
                r.problem(p, n, "must be from 4KB to 16MB")
            } else {
                l[keyPath: keyPath] = v
            }
        }
    }

    /// `response_spool_max`, `spool_total`, `request_spool_total`: a size, or `0`/`off`.
    static func spoolSize(_ keyPath: WritableKeyPath<Limits, Int> & Sendable)
        -> @Sendable (_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) -> Void
    {
        { l, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s == "0" || s == "off" {
                l[keyPath: keyPath] = 0
            } else if let v = r.size(n, path: p) {
                l[keyPath: keyPath] = v
            }
        }
    }

    /// `request_spool_per_client: 10%`.
    static func requestSpoolPerClient(_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let s = r.string(n, path: p) else { return }
        if let v = share(s) {
            l.requestSpoolPerClient = v
        } else {
            r.problem(p, n, "must be a percentage from 1% to 100% (e.g. 10%)")
        }
    }

    /// `spool_dir`: a directory this user may write.
    static func spoolDirectory(_ l: inout Limits, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let dir = r.string(n, path: p) else { return }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) || !isDirectory.boolValue {
            r.problem(p, n, "\(dir) is not a directory")
        } else if access(dir, W_OK) != 0 {
            r.problem(p, n, "\(dir) is not writable by this user")
        } else {
            l.spoolDirectory = dir
        }
    }

    /// "10%" → 0.1, from 1% to 100% (decimals allowed: "12.5%"); nil: not such a percentage.
    static func share(_ text: String) -> Double? {
        guard text.hasSuffix("%"), let v = Double(text.dropLast()), v >= 1, v <= 100 else { return nil }
        return v / 100
    }
}
