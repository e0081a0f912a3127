import Foundation
import Yams

/// `limits.response_buffer`, `request_buffer`, `response_spool_max`, `spool_total`,
/// `request_spool_total`, `request_spool_per_client` and `spool_dir`: proxy buffering for slow
/// clients (ResponseSpool, RequestBufferingStage).
extension ConfigParser {
    static func responseSpool(_ m: [String: Node], _ l: inout Limits, _ r: ConfigReader) {
        if let n = m["response_buffer"], let v = r.size(n, path: "limits.response_buffer") {
            if v < 4 << 10 || v > 16 << 20 {
                r.problem("limits.response_buffer", n, "must be from 4KB to 16MB")
            } else {
                l.responseBuffer = v
            }
        }
        if let n = m["request_buffer"], let v = r.size(n, path: "limits.request_buffer") {
            if v < 4 << 10 || v > 16 << 20 {
                r.problem("limits.request_buffer", n, "must be from 4KB to 16MB")
            } else {
                l.requestBuffer = v
            }
        }
        for (key, keyPath) in [
            ("response_spool_max", \Limits.responseSpoolMax), ("spool_total", \.spoolTotal),
            ("request_spool_total", \.requestSpoolTotal)
        ] {
            guard let n = m[key], let s = r.string(n, path: "limits.\(key)") else { continue }
            if s == "0" || s == "off" {
                l[keyPath: keyPath] = 0
            } else if let v = r.size(n, path: "limits.\(key)") {
                l[keyPath: keyPath] = v
            }
        }
        if let n = m["request_spool_per_client"], let s = r.string(n, path: "limits.request_spool_per_client") {
            if let v = share(s) {
                l.requestSpoolPerClient = v
            } else {
                r.problem("limits.request_spool_per_client", n, "must be a percentage from 1% to 100% (e.g. 10%)")
            }
        }
        if let n = m["spool_dir"], let dir = r.string(n, path: "limits.spool_dir") {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) || !isDirectory.boolValue {
                r.problem("limits.spool_dir", n, "\(dir) is not a directory")
            } else if access(dir, W_OK) != 0 {
                r.problem("limits.spool_dir", n, "\(dir) is not writable by this user")
            } else {
                l.spoolDirectory = dir
            }
        }
    }

    /// "10%" → 0.1, from 1% to 100% (decimals allowed: "12.5%"); nil: not such a percentage.
    static func share(_ text: String) -> Double? {
        guard text.hasSuffix("%"), let v = Double(text.dropLast()), v >= 1, v <= 100 else { return nil }
        return v / 100
    }
}
