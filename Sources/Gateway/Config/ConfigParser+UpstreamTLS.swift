import Foundation
import Reactor
import Yams

/// `upstreams.NAME.tls` of an `https://` upstream: what to trust, the name to send and
/// check, the client certificate, and the one switch that turns verification off
/// (`UpstreamTLSConfig.keyTable`).
extension ConfigParser {
    /// The settings (defaults without a `tls:` block) and the context built from them, or
    /// nil context with the problems reported at their key paths.
    static func upstreamTLS(_ node: Node?, path p: String, host: String, http2: Bool = false, _ r: ConfigReader) -> (
        UpstreamTLSConfig, UpstreamTLSContext?
    ) {
        var tls = UpstreamTLSConfig(serverName: host)
        if let node {
            guard let m = r.mapping(node, path: p, section: .upstreamTLS) else { return (tls, nil) }
            let context = UpstreamTLSKeyContext(r)
            UpstreamTLSConfig.keyTable.read(m, into: &tls, path: p, context)
            let fits = ConfigValidation.upstreamTLS(context, node: node, path: p, tls, r)
            guard fits, !context.refused else { return (tls, nil) }
        }
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
