import Foundation
import Reactor
import Yams

/// An upstream as its keys say it (`UpstreamConfig.keyTable`): the config its plain keys
/// fill in, and the keys that go together (the URL, which makes the upstream; the protocol;
/// `tls`, read only for an https URL), which ConfigParser.upstreams combines.
struct UpstreamKeys {
    var config: UpstreamConfig
    /// `url:`, parsed (nil inside: refused, a problem says why).
    var url: GivenKey<ConfigValues.ParsedURL>?
    var `protocol`: GivenKey<ConfigParser.UpstreamProtocol>?
    var tls: Node?
}

extension UpstreamConfig {
    /// The keys of `upstreams.NAME`, each said once: its reference row (type and default,
    /// checked against the model's defaults by ConfigReferenceTests) and its reader, in this
    /// order. Whether `protocol` and `tls` fit the URL's scheme is ConfigValidation's to say.
    static let keyTable = ConfigKeyTable<UpstreamKeys, ConfigReader>([
        .init(
            "url", type: "http or https URL (a path is prefixed to every forwarded path)", default: "none: required"
        ) { k, n, p, r in
            let text = r.string(n, path: p)
            let url = text.flatMap(ConfigValues.url)
            if let text, url == nil {
                r.problem(
                    p, n, "\"\(text)\" is not an http URL like http://127.0.0.1:3000 (no query, fragment or user)")
            }
            k.url = GivenKey(value: url, node: n)
        },
        .init(
            "protocol", type: "`http1`, `h2c` or `h2`", default: "`http1`",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "http1" && !defaults.http2 }
        ) { k, n, p, r in
            k.protocol = GivenKey(value: ConfigParser.upstreamProtocol(n, path: p, r), node: n)
        },
        .init(
            "connect_timeout", type: "duration", default: "`2s`",
            checkedBy: ConfigDefault.duration(defaults.connectTimeout)
        ) { up, n, p, r in
            if let v = r.duration(n, path: p) { up.config.connectTimeout = max(v, 0.001) }
        },
        .init("timeout", type: "duration", default: "`30s`", checkedBy: ConfigDefault.duration(defaults.timeout)) {
            up, n, p, r in
            if let v = r.duration(n, path: p) { up.config.timeout = max(v, 0.001) }
        },
        .init(
            "host_header", type: "`upstream`, `preserve` or a host name",
            default: "`upstream` (the upstream's host:port)",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "upstream" && defaults.hostHeader == .upstream }
        ) { up, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            switch s {
            case "upstream": up.config.hostHeader = .upstream
            case "preserve": up.config.hostHeader = .preserve
            default:
                if HostNormalizer.normalize(s) != nil {
                    up.config.hostHeader = .fixed(s)
                } else {
                    r.problem(p, n, "must be upstream, preserve, or a host name")
                }
            }
        },
        .init(
            "max_idle_connections",
            type:
                "number: idle keep-alive connections a worker keeps; a burst's surplus stays 1 s unused before it is closed down to this (so the next burst reuses it); `0` turns keep-alive off",
            default: "`64`", checkedBy: ConfigDefault.number(defaults.maxIdleConnections)
        ) { up, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Int(s), v >= 0 {
                up.config.maxIdleConnections = v
            } else {
                r.problem(p, n, "must be a number ≥ 0")
            }
        },
        .init(
            "sign", type: "mapping (below): sign requests (RFC 9421)", default: "none: not signed",
            reader: .value { up, n, p, r in up.config.sign = ConfigParser.messageSigning(n, path: p, r) }),
        UpstreamCredentialsModule.upstreamKey,
        .init(
            "tls", type: "mapping (below), `https://` URLs only",
            default: "verify against the system's CAs and the URL's host"
        ) { k, n, _, _ in k.tls = n },
        // The connection cap and its wait queue: docs/proxy.md ("Limits") says why the
        // defaults are what they are.
        .init(
            "max_connections", type: "number", default: "`1024`",
            checkedBy: ConfigDefault.number(defaults.maxConnections)
        ) { up, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Int(s), v >= 1, v <= 1_000_000 {
                up.config.maxConnections = v
            } else {
                r.problem(p, n, "must be a number from 1 to 1000000")
            }
        },
        .init("max_pending", type: "number", default: "`1024`", checkedBy: ConfigDefault.number(defaults.maxPending)) {
            up, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Int(s), v >= 0, v <= 1_000_000 {
                up.config.maxPending = v
            } else {
                r.problem(p, n, "must be a number from 0 (no queue: 503 at the cap) to 1000000")
            }
        },
        .init(
            "pending_timeout", type: "duration", default: "`5s`",
            checkedBy: ConfigDefault.duration(defaults.pendingTimeout)
        ) { up, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 0.001 || v > 300 {
                r.problem(p, n, "must be from 1ms to 300s (e.g. 5s)")
            } else {
                up.config.pendingTimeout = v
            }
        }
    ])

    /// An upstream with every default, for the reference's default checks.
    private static var defaults: UpstreamConfig { UpstreamConfig(name: "", host: "", port: 80, basePath: "") }
}

/// What the readers of `upstreams.NAME.tls` are handed: the reader, and whether a value was
/// refused (then no TLS context is built).
final class UpstreamTLSKeyContext {
    let r: ConfigReader
    var refused = false
    // The keys given, for the checks between them (ConfigValidation.upstreamTLS).
    var caFile: Node?
    var certFile: Node?
    var keyFile: Node?
    var insecureSkipVerify: Node?

    init(_ r: ConfigReader) { self.r = r }
}

extension UpstreamTLSConfig {
    /// The keys of `upstreams.NAME.tls`, read here in this order; the pairs that do not go
    /// together (cert_file without key_file, insecure_skip_verify with ca_file) are
    /// ConfigValidation's.
    static let keyTable = ConfigKeyTable<UpstreamTLSConfig, UpstreamTLSKeyContext>([
        .init("ca_file", type: "path of PEM CAs", default: "the system's CAs") { tls, n, p, c in
            c.caFile = n
            tls.caFile = readableFile(n, path: p, c)
        },
        .init("server_name", type: "host name or IP address", default: "the URL's host") { tls, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            if ConfigParser.validServerName(s) {
                tls.serverName = s.lowercased()
            } else {
                c.r.problem(
                    p, n,
                    "\"\(s)\" is not a host name or IP address (it is sent as SNI and checked against the certificate)")
                c.refused = true
            }
        },
        .init("cert_file", type: "path of a PEM client certificate", default: "none") { tls, n, p, c in
            c.certFile = n
            tls.certFile = readableFile(n, path: p, c)
        },
        .init("key_file", type: "path of its PEM key", default: "none") { tls, n, p, c in
            c.keyFile = n
            tls.keyFile = readableFile(n, path: p, c)
        },
        .init(
            "insecure_skip_verify", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(UpstreamTLSConfig(serverName: "").insecureSkipVerify)
        ) { tls, n, p, c in
            c.insecureSkipVerify = n
            if let v = c.r.bool(n, path: p) { tls.insecureSkipVerify = v }
        }
    ])

    /// The file's full path (relative to the config file), or nil with the problem when it
    /// cannot be read.
    private static func readableFile(_ n: Node, path p: String, _ c: UpstreamTLSKeyContext) -> String? {
        guard let s = c.r.string(n, path: p) else { return nil }
        let full = s.hasPrefix("/") ? s : "\(c.r.baseDirectory)/\(s)"
        guard FileManager.default.isReadableFile(atPath: full) else {
            c.r.problem(p, n, "cannot read \(full)")
            c.refused = true
            return nil
        }
        return full
    }
}
