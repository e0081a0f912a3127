import Reactor
import Yams

/// A `listen[]` mapping as its keys say it (`ListenerConfig.keyTable`), or `admin_listen`'s
/// (`adminKeyTable`); ConfigParser.listeners and .adminListener make the listener: the
/// address is required, and http2's default depends on tls.
struct ListenerKeys {
    /// `address:`, read as the listener's own value (its problems name the listener).
    var address: Node?
    /// `tls:`, when given (nil inside: it did not read).
    var tls: GivenKey<ListenerTLS>?
    var http2: Bool?
}

extension ListenerConfig {
    /// The keys of a `listen[]` mapping (the item itself is the address when it is a string).
    static let keyTable = ConfigKeyTable<ListenerKeys, ConfigReader>([
        .init("address", type: "host:port", default: "none: required") { k, n, _, _ in k.address = n },
        .init("tls", type: "mapping (below)", default: "none (plain HTTP)") { k, n, p, r in
            k.tls = GivenKey(value: ConfigParser.listenerTLS(n, p, r), node: n)
        },
        .init("http2", type: "bool", default: "on with `tls`, off without") { k, n, p, r in
            k.http2 = r.bool(n, path: p)
        }
    ])

    /// The keys of `admin_listen` as a mapping.
    static let adminKeyTable = ConfigKeyTable<ListenerKeys, ConfigReader>([
        .init("address", type: "host:port", default: "—") { k, n, _, _ in k.address = n },
        .init("tls", type: "as `listen[].tls`", default: "none (plain HTTP)") { k, n, p, r in
            k.tls = GivenKey(value: ConfigParser.listenerTLS(n, p, r), node: n)
        }
    ])
}

/// A listener's `tls:` as its keys say it, each read by its row (`ListenerTLS.keyTable`).
/// `ListenerTLS.init(_:path:node:_:)` combines the keys that go together: the certificates,
/// the profile and its lists, and the client certificate settings.
struct ListenerTLSKeys {
    var certFile: GivenKey<String>?
    var keyFile: GivenKey<String>?
    /// `certificates:`, the pairs that read (nil: not given).
    var certificates: GivenKey<[TLSCertificateFiles]>?
    /// `profile:` (nil: not given, intermediate).
    var profile: GivenKey<String>?
    var ciphers: GivenKey<String>?
    var ciphersuites: GivenKey<String>?
    var curves: GivenKey<String>?
    var watchInterval = ListenerTLS(certificates: []).watchInterval
    var clientCA: GivenKey<String>?
    var clientCertificate: GivenKey<String>?
    var clientCRL: GivenKey<String>?
}

/// `cert_file` and `key_file` of an item of `certificates:`.
struct CertificatePairKeys {
    var certFile: GivenKey<String>?
    var keyFile: GivenKey<String>?
}

extension ListenerTLS {
    /// The keys of a listener's `tls:`, each said once: its reference row (type and default,
    /// checked against `ListenerTLS`'s defaults by ConfigReferenceTests) and its reader, into
    /// `ListenerTLSKeys`; `init(_:path:node:_:)` combines them.
    static let keyTable = ConfigKeyTable<ListenerTLSKeys, ConfigReader>([
        .init("cert_file", type: "path (PEM certificate chain, leaf first)", default: "none") { k, n, p, r in
            k.certFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("key_file", type: "path (PEM private key, no passphrase)", default: "none") { k, n, p, r in
            k.keyFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "certificates", type: "list of `{ cert_file, key_file }`", default: "none (use `cert_file`/`key_file`)"
        ) { k, n, p, r in
            var pairs: [TLSCertificateFiles] = []
            for (i, item) in (r.sequence(n, path: p) ?? []).enumerated() {
                let path = "\(p)[\(i)]"
                guard let m = r.mapping(item, path: path, section: .listenTLSCertificate) else { continue }
                var pair = CertificatePairKeys()
                certificateKeyTable.read(m, into: &pair, path: path, r)
                if let files = TLSCertificateFiles(pair, path: path, node: item, r) { pairs.append(files) }
            }
            if pairs.isEmpty { r.problem(p, n, "needs at least one { cert_file, key_file }") }
            k.certificates = GivenKey(value: pairs, node: n)
        },
        .init(
            "profile", type: "`intermediate`, `modern` or `custom`", default: "`intermediate`",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "intermediate" && defaults.profile == .intermediate
            }
        ) { k, n, p, r in
            k.profile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "ciphers", type: "OpenSSL cipher list (TLS 1.2); `\"\"`: no TLS 1.2", default: "the intermediate list"
        ) { k, n, p, r in
            k.ciphers = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "ciphersuites", type: "OpenSSL TLS 1.3 suite list; `\"\"`: no TLS 1.3", default: "the three AEAD suites"
        ) { k, n, p, r in
            k.ciphersuites = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("curves", type: "OpenSSL group list", default: "`X25519:P-256:P-384`") { k, n, p, r in
            k.curves = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "watch", type: "duration (1s to 1h) or `off`", default: "`5s`",
            checkedBy: { cell in defaults.watchInterval.map { ConfigDefault.duration($0)(cell) } ?? false }
        ) { k, n, p, r in
            guard let text = r.string(n, path: p) else { return }
            if text == "off" {
                k.watchInterval = nil
            } else if let v = r.duration(n, path: p) {
                if v < 1 || v > 3600 { r.problem(p, n, "must be from 1s to 1h, or off") } else { k.watchInterval = v }
            }
        },
        .init(
            "client_ca_file", type: "path (PEM CA certificates)", default: "none (no client certificates asked for)"
        ) { k, n, p, r in
            k.clientCA = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("client_certificate", type: "`optional` or `required`", default: "`optional`") { k, n, p, r in
            k.clientCertificate = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("client_crl_file", type: "path (PEM CRLs)", default: "none") { k, n, p, r in
            k.clientCRL = GivenKey(value: r.string(n, path: p), node: n)
        }
    ])

    /// The keys of an item of `certificates:`.
    static let certificateKeyTable = ConfigKeyTable<CertificatePairKeys, ConfigReader>([
        .init("cert_file", type: "path (PEM certificate chain)", default: "none") { k, n, p, r in
            k.certFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("key_file", type: "path (PEM private key)", default: "none") { k, n, p, r in
            k.keyFile = GivenKey(value: r.string(n, path: p), node: n)
        }
    ])

    private static var defaults: ListenerTLS { ListenerTLS(certificates: []) }
}
