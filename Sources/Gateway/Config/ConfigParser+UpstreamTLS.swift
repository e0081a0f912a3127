import Foundation
import Reactor
import Yams

/// `upstreams.NAME.tls` of an `https://` upstream: what to trust, the name to send and
/// check, the client certificate, and the one switch that turns verification off.
extension ConfigParser {
    /// The settings (defaults without a `tls:` block) and the context built from them, or
    /// nil context with the problems reported at their key paths.
    static func upstreamTLS(_ node: Node?, path p: String, host: String, http2: Bool = false, _ r: ConfigReader) -> (
        UpstreamTLSConfig, UpstreamTLSContext?
    ) {
        var tls = UpstreamTLSConfig(serverName: host)
        var ok = true
        if let node {
            guard let m = r.mapping(node, path: p, section: .upstreamTLS) else { return (tls, nil) }
            func file(_ key: String) -> String? {
                guard let n = m[key], let s = r.string(n, path: "\(p).\(key)") else { return nil }
                let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
                guard FileManager.default.isReadableFile(atPath: full) else {
                    r.problem("\(p).\(key)", n, "cannot read \(full)")
                    ok = false
                    return nil
                }
                return full
            }
            tls.caFile = file("ca_file")
            tls.certFile = file("cert_file")
            tls.keyFile = file("key_file")
            if let n = m["server_name"], let s = r.string(n, path: "\(p).server_name") {
                if validServerName(s) {
                    tls.serverName = s.lowercased()
                } else {
                    r.problem(
                        "\(p).server_name", n,
                        "\"\(s)\" is not a host name or IP address (it is sent as SNI and checked against the certificate)"
                    )
                    ok = false
                }
            }
            if let n = m["insecure_skip_verify"], let v = r.bool(n, path: "\(p).insecure_skip_verify") {
                tls.insecureSkipVerify = v
            }
            if (m["cert_file"] == nil) != (m["key_file"] == nil) {
                let missing = m["cert_file"] == nil ? "cert_file" : "key_file"
                r.problem(
                    p, node,
                    "a client certificate needs both cert_file and key_file; add \(missing) or remove the other")
                ok = false
            }
            if tls.insecureSkipVerify && m["ca_file"] != nil {
                r.problem(
                    "\(p).insecure_skip_verify", m["insecure_skip_verify"],
                    "turns certificate verification off, so ca_file would never be used; remove insecure_skip_verify (ca_file is the safe way to trust a private CA)"
                )
                ok = false
            }
        }
        guard ok else { return (tls, nil) }
        do {
            let context = try UpstreamTLSContext(
                serverName: tls.serverName, caFile: tls.caFile, certFile: tls.certFile,
                keyFile: tls.keyFile, insecureSkipTLSVerify: tls.insecureSkipVerify, http2: http2)
            return (tls, context)
        } catch {
            // The files are there but OpenSSL refused them (not PEM, key and certificate
            // that do not match, no system CA store).
            r.problem(p, node, "\(error)")
            return (tls, nil)
        }
    }

    /// A DNS name (letters, digits, '-', '.'; no trailing dot) or an IP literal.
    static func validServerName(_ s: String) -> Bool {
        if s.isEmpty || s.count > 253 { return false }
        if s.contains(":") { return s.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
        return !s.hasPrefix(".") && !s.hasSuffix(".") && !s.contains("..")
            && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
    }
}
