import Foundation
import JOSE

/// The status page's TLS certificates: each listener's, when it expires, and whether that is
/// within `expiryWarning` (the same window `/readyz` names them in).
extension StatusReport {
    static let expiryWarning = 7.0 * 86400

    func expiresSoon(_ c: Certificate) -> Bool { c.notAfter - generatedAt < Self.expiryWarning }

    var certificatesJSON: JSONValue {
        .array(
            certificates.map { c in
                var o = JSONObject()
                o["listen"] = .string(c.listen)
                o["cert_file"] = .string(c.file)
                o["not_after"] = Self.timestamp(c.notAfter)
                o["sha256"] = .string(c.sha256)
                o["expires_within_7_days"] = .bool(expiresSoon(c))
                return .object(o)
            })
    }

    var certificatesSection: String {
        guard !certificates.isEmpty else { return "" }
        var out = "<h2>TLS certificates</h2><table id=\"certificates\"><tr><th>Listener</th><th>File</th>"
        out += "<th>Expires</th><th>SHA-256</th></tr>"
        for c in certificates {
            let soon = expiresSoon(c)
            out += "<tr><td>\(LoginPages.escape(c.listen))</td><td>\(LoginPages.escape(c.file))</td>"
            out +=
                "<td\(soon ? " class=\"bad\"" : "")>\(Self.rfc3339(c.notAfter))\(soon ? " (within 7 days)" : "")</td>"
            out += "<td>\(c.sha256)</td></tr>"
        }
        return out + "</table>"
    }
}
