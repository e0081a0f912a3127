import Reactor
import Yams

extension ListenerConfig {
    /// The keys of a `listen[]` mapping, read by ConfigParser.listeners: the address (the
    /// item itself when it is a string) and tls make the listener, and http2's default
    /// depends on tls.
    static let keyTable = ConfigKeyTable<ListenerConfig, ConfigReader>([
        .init("address", type: "host:port", default: "none: required", by: "ConfigParser.listeners"),
        .init("tls", type: "mapping (below)", default: "none (plain HTTP)", by: "ConfigParser.listeners"),
        .init("http2", type: "bool", default: "on with `tls`, off without", by: "ConfigParser.listeners")
    ])

    /// The keys of `admin_listen` as a mapping, read by ConfigParser.adminListener.
    static let adminKeyTable = ConfigKeyTable<GatewayConfig, ConfigReader>([
        .init("address", type: "host:port", default: "—", by: "ConfigParser.adminListener"),
        .init("tls", type: "as `listen[].tls`", default: "none (plain HTTP)", by: "ConfigParser.adminListener")
    ])
}

extension ListenerTLS {
    /// The keys of a listener's `tls:`, each said once: its reference row (type and default,
    /// checked against `ListenerTLS`'s defaults by ConfigReferenceTests) and its reader. The
    /// certificates, the profile with its lists, and the client certificate settings are read
    /// together by the readers named; `watch` here. The keys that do not go together are
    /// ConfigValidation's.
    static let keyTable = ConfigKeyTable<ListenerTLS, ConfigReader>([
        .init(
            "cert_file", type: "path (PEM certificate chain, leaf first)", default: "none",
            by: "ConfigParser.certificatePair"),
        .init(
            "key_file", type: "path (PEM private key, no passphrase)", default: "none",
            by: "ConfigParser.certificatePair"),
        .init(
            "certificates", type: "list of `{ cert_file, key_file }`", default: "none (use `cert_file`/`key_file`)",
            by: "ConfigParser.listenerTLS"),
        .init(
            "profile", type: "`intermediate`, `modern` or `custom`", default: "`intermediate`",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "intermediate" && defaults.profile == .intermediate
            },
            by: "ConfigParser.tlsProfile"),
        .init(
            "ciphers", type: "OpenSSL cipher list (TLS 1.2); `\"\"`: no TLS 1.2", default: "the intermediate list",
            by: "ConfigParser.tlsProfile"),
        .init(
            "ciphersuites", type: "OpenSSL TLS 1.3 suite list; `\"\"`: no TLS 1.3", default: "the three AEAD suites",
            by: "ConfigParser.tlsProfile"),
        .init("curves", type: "OpenSSL group list", default: "`X25519:P-256:P-384`", by: "ConfigParser.tlsProfile"),
        .init(
            "watch", type: "duration (1s to 1h) or `off`", default: "`5s`",
            checkedBy: { cell in defaults.watchInterval.map { ConfigDefault.duration($0)(cell) } ?? false }
        ) { tls, n, p, r in
            guard let text = r.string(n, path: p) else { return }
            if text == "off" {
                tls.watchInterval = nil
            } else if let v = r.duration(n, path: p) {
                if v < 1 || v > 3600 { r.problem(p, n, "must be from 1s to 1h, or off") } else { tls.watchInterval = v }
            }
        },
        .init(
            "client_ca_file", type: "path (PEM CA certificates)", default: "none (no client certificates asked for)",
            by: "ConfigParser.clientCertificates"),
        .init(
            "client_certificate", type: "`optional` or `required`", default: "`optional`",
            by: "ConfigParser.clientCertificates"),
        .init("client_crl_file", type: "path (PEM CRLs)", default: "none", by: "ConfigParser.clientCertificates")
    ])

    /// The keys of an item of `certificates:`, read by ConfigParser.certificatePair.
    static let certificateKeyTable = ConfigKeyTable<TLSCertificateFiles, ConfigReader>([
        .init("cert_file", type: "path (PEM certificate chain)", default: "none", by: "ConfigParser.certificatePair"),
        .init("key_file", type: "path (PEM private key)", default: "none", by: "ConfigParser.certificatePair")
    ])

    private static var defaults: ListenerTLS { ListenerTLS(certificates: []) }
}
