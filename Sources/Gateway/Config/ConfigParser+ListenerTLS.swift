import Reactor
import Yams

/// A listener's `tls:` section (`ListenerTLS.keyTable`): the profile, and one certificate
/// (`cert_file`, `key_file`) or several (`certificates:`, chosen by SNI).
extension ConfigParser {
    static func listenerTLS(_ node: Node, _ p: String, _ r: ConfigReader) -> ListenerTLS? {
        guard let m = r.mapping(node, path: p, section: .listenTLS) else { return nil }
        var pairs: [TLSCertificateFiles] = []
        if let list = m["certificates"] {
            for (i, item) in (r.sequence(list, path: "\(p).certificates") ?? []).enumerated() {
                let path = "\(p).certificates[\(i)]"
                if let im = r.mapping(item, path: path, section: .listenTLSCertificate),
                    let pair = certificatePair(im, item, path, r)
                {
                    pairs.append(pair)
                }
            }
            if pairs.isEmpty { r.problem("\(p).certificates", list, "needs at least one { cert_file, key_file }") }
        } else if let pair = certificatePair(m, node, p, r) {
            pairs.append(pair)
        }
        let profile = tlsProfile(m, p, r)
        if let profile, let problem = profile.problem { r.problem(p, node, problem) }
        var tls = ListenerTLS(certificates: pairs)
        ListenerTLS.keyTable.read(m, into: &tls, path: p, r)
        let clients = clientCertificates(m, p, r)
        ConfigValidation.listenerTLS(m, node: node, path: p, profile: profile, clients: clients, r)
        guard !pairs.isEmpty, let profile else { return nil }
        tls.profile = profile
        tls.clients = clients
        return tls
    }

    /// `client_ca_file`, `client_certificate: optional | required`, `client_crl_file`.
    private static func clientCertificates(_ m: [String: Node], _ p: String, _ r: ConfigReader)
        -> ClientCertificates?
    {
        let text = { (key: String) in m[key].flatMap { r.string($0, path: "\(p).\(key)") } }
        guard let ca = text("client_ca_file") else { return nil }
        var required = false
        if let mode = text("client_certificate") {
            switch mode {
            case "optional": required = false
            case "required": required = true
            default: r.problem("\(p).client_certificate", m["client_certificate"], "must be optional or required")
            }
        }
        return ClientCertificates(caFile: ca, crlFile: text("client_crl_file"), required: required)
    }

    /// `cert_file` and `key_file` from a `tls:` or a `certificates:` item.
    private static func certificatePair(_ m: [String: Node], _ node: Node, _ p: String, _ r: ConfigReader)
        -> TLSCertificateFiles?
    {
        let cert = m["cert_file"].flatMap { r.string($0, path: "\(p).cert_file") }
        let key = m["key_file"].flatMap { r.string($0, path: "\(p).key_file") }
        guard let cert, let key else {
            r.problem(p, node, "needs both cert_file and key_file")
            return nil
        }
        return TLSCertificateFiles(certFile: cert, keyFile: key)
    }

    /// `profile: intermediate | modern | custom`; the lists only with `custom`.
    private static func tlsProfile(_ m: [String: Node], _ p: String, _ r: ConfigReader) -> TLSProfile? {
        let name = m["profile"].flatMap { r.string($0, path: "\(p).profile") } ?? "intermediate"
        let list = { (key: String) in m[key].flatMap { r.string($0, path: "\(p).\(key)") } }
        switch name {
        case "intermediate", "modern":
            return name == "modern" ? .modern : .intermediate
        case "custom":
            return .custom(ciphers: list("ciphers"), ciphersuites: list("ciphersuites"), curves: list("curves"))
        default:
            r.problem("\(p).profile", m["profile"], "must be intermediate, modern or custom")
            return nil
        }
    }
}
