import Foundation
import OAuth
import Reactor
import Yams

/// The `upstreams` section: each upstream's URL, Host header, pool and timeouts
/// (`UpstreamConfig.keyTable`).
extension ConfigParser {
    static func upstreams(_ node: Node?, _ r: ConfigReader) -> [String: UpstreamConfig] {
        guard let node else { return [:] }
        guard let m = r.mapping(node, path: "upstreams", section: nil) else { return [:] }
        var out: [String: UpstreamConfig] = [:]
        for (name, value) in m {
            let p = "upstreams.\(name)"
            guard let u = r.mapping(value, path: p, section: .upstream) else { continue }
            var keys = UpstreamKeys(config: UpstreamConfig(name: name, host: "", port: 0, basePath: ""))
            UpstreamConfig.keyTable.read(u, into: &keys, path: p, r)
            guard let given = keys.url else {
                r.problem(p, value, "needs url: http://host:port")
                continue
            }
            guard let url = given.value else { continue }
            var up = keys.config
            (up.host, up.port, up.basePath) = (url.host, url.port, url.path)
            let https = url.scheme == "https"
            let proto = keys.protocol?.value
            up.http2 = proto == .h2 || proto == .h2c
            if https {
                (up.tls, up.tlsContext) = upstreamTLS(keys.tls, path: "\(p).tls", host: url.host, http2: up.http2, r)
            }
            ConfigValidation.upstream(.init(keys: keys, path: p, upstream: up, https: https), r)
            out[name] = up
        }
        return out
    }

    /// `protocol:` of an upstream.
    enum UpstreamProtocol: String {
        /// HTTP/1.1, the default.
        case http1
        /// HTTP/2 with prior knowledge over plain TCP (RFC 9113 §3.3).
        case h2c
        /// HTTP/2 over TLS, agreed by ALPN (§3.2).
        case h2
    }

    /// `protocol: http1 | h2c | h2`, nil when left out or refused (a problem was reported).
    /// Whether it fits the URL's scheme is ConfigValidation.upstream's to say.
    static func upstreamProtocol(_ node: Node?, path p: String, _ r: ConfigReader) -> UpstreamProtocol? {
        guard let node, let s = r.string(node, path: p) else { return nil }
        guard let proto = UpstreamProtocol(rawValue: s) else {
            r.problem(p, node, "must be http1, h2c or h2")
            return nil
        }
        return proto
    }
}
