import Reactor
import Yams

/// A listener's `tls:` section: its keys read by their rows (`ListenerTLS.keyTable`), then
/// combined: the profile, and one certificate (`cert_file`, `key_file`) or several
/// (`certificates:`, chosen by SNI).
extension ConfigParser {
    static func listenerTLS(_ node: Node, _ p: String, _ r: ConfigReader) -> ListenerTLS? {
        guard let m = r.mapping(node, path: p, section: .listenTLS) else { return nil }
        var keys = ListenerTLSKeys()
        ListenerTLS.keyTable.read(m, into: &keys, path: p, r)
        return ListenerTLS(keys, path: p, node: node, r)
    }
}

extension TLSCertificateFiles {
    /// `cert_file` and `key_file`, both, from a `tls:` or a `certificates:` item.
    init?(_ keys: CertificatePairKeys, path p: String, node: Node, _ r: ConfigReader) {
        guard let cert = keys.certFile?.value, let key = keys.keyFile?.value else {
            r.problem(p, node, "needs both cert_file and key_file")
            return nil
        }
        self.init(certFile: cert, keyFile: key)
    }
}

extension ListenerTLS {
    /// The keys that go together, combined; nil when a certificate or the profile is missing
    /// (a problem says why). Which keys may not be given together is ConfigValidation's.
    init?(_ keys: ListenerTLSKeys, path p: String, node: Node, _ r: ConfigReader) {
        var pairs: [TLSCertificateFiles] = []
        if let list = keys.certificates {
            pairs = list.value ?? []
        } else if let pair = TLSCertificateFiles(
            CertificatePairKeys(certFile: keys.certFile, keyFile: keys.keyFile), path: p, node: node, r)
        {
            pairs = [pair]
        }
        let profile = Self.profile(keys, path: p, r)
        if let profile, let problem = profile.problem { r.problem(p, node, problem) }
        let clients = Self.clientCertificates(keys, path: p, r)
        ConfigValidation.listenerTLS(keys, node: node, path: p, profile: profile, clients: clients, r)
        guard !pairs.isEmpty, let profile else { return nil }
        self.init(profile: profile, certificates: pairs, watchInterval: keys.watchInterval, clients: clients)
    }

    /// `profile: intermediate | modern | custom`; the lists only with `custom`.
    private static func profile(_ keys: ListenerTLSKeys, path p: String, _ r: ConfigReader) -> TLSProfile? {
        switch keys.profile?.value ?? "intermediate" {
        case "intermediate": return .intermediate
        case "modern": return .modern
        case "custom":
            return .custom(
                ciphers: keys.ciphers?.value, ciphersuites: keys.ciphersuites?.value, curves: keys.curves?.value)
        default:
            r.problem("\(p).profile", keys.profile?.node, "must be intermediate, modern or custom")
            return nil
        }
    }

    /// `client_ca_file`, `client_certificate: optional | required`, `client_crl_file`: nil
    /// without a CA file.
    private static func clientCertificates(_ keys: ListenerTLSKeys, path p: String, _ r: ConfigReader)
        -> ClientCertificates?
    {
        guard let ca = keys.clientCA?.value else { return nil }
        var required = false
        if let mode = keys.clientCertificate, let text = mode.value {
            switch text {
            case "optional": required = false
            case "required": required = true
            default: r.problem("\(p).client_certificate", mode.node, "must be optional or required")
            }
        }
        return ClientCertificates(caFile: ca, crlFile: keys.clientCRL?.value, required: required)
    }
}
