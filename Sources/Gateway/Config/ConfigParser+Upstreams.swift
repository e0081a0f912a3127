import Foundation
import OAuth
import Reactor
import Yams

/// The `upstreams` section: each upstream's URL, Host header, pool and timeouts.
extension ConfigParser {
    static func upstreams(_ node: Node?, _ r: ConfigReader) -> [String: UpstreamConfig] {
        guard let node else { return [:] }
        guard let m = r.mapping(node, path: "upstreams", section: nil) else { return [:] }
        var out: [String: UpstreamConfig] = [:]
        for (name, value) in m {
            let p = "upstreams.\(name)"
            guard let u = r.mapping(value, path: p, section: .upstream) else { continue }
            guard let urlNode = u["url"] else {
                r.problem(p, value, "needs url: http://host:port")
                continue
            }
            guard let s = r.string(urlNode, path: "\(p).url") else { continue }
            guard let url = ConfigValues.url(s) else {
                r.problem(
                    "\(p).url", urlNode,
                    "\"\(s)\" is not an http URL like http://127.0.0.1:3000 (no query, fragment or user)")
                continue
            }
            var up = UpstreamConfig(name: name, host: url.host, port: url.port, basePath: url.path)
            up.http2 = upstreamProtocol(u["protocol"], path: "\(p).protocol", https: url.scheme == "https", r)
            if url.scheme == "https" {
                (up.tls, up.tlsContext) = upstreamTLS(
                    u["tls"], path: "\(p).tls", host: url.host, http2: up.http2, r)
            } else if let t = u["tls"] {
                r.problem(
                    "\(p).tls", t,
                    "applies only to an https:// url; make the url https://\(url.host):\(url.port)\(url.path) or remove tls"
                )
            }
            if let n = u["connect_timeout"], let v = r.duration(n, path: "\(p).connect_timeout") {
                up.connectTimeout = max(v, 0.001)
            }
            if let n = u["timeout"], let v = r.duration(n, path: "\(p).timeout") { up.timeout = max(v, 0.001) }
            if let n = u["max_idle_connections"], let s = r.string(n, path: "\(p).max_idle_connections") {
                if let v = Int(s), v >= 0 {
                    up.maxIdleConnections = v
                } else {
                    r.problem("\(p).max_idle_connections", n, "must be a number ≥ 0")
                }
            }
            upstreamCap(u, path: p, &up, r)
            if let n = u["host_header"], let s = r.string(n, path: "\(p).host_header") {
                switch s {
                case "upstream": up.hostHeader = .upstream
                case "preserve": up.hostHeader = .preserve
                default:
                    if HostNormalizer.normalize(s) != nil {
                        up.hostHeader = .fixed(s)
                    } else {
                        r.problem("\(p).host_header", n, "must be upstream, preserve, or a host name")
                    }
                }
            }
            out[name] = up
        }
        return out
    }

    /// `protocol: http1 | h2c | h2`: HTTP/1.1 (the default), HTTP/2 with prior knowledge
    /// over plain TCP (RFC 9113 §3.3), or HTTP/2 over TLS agreed by ALPN (§3.2). True for
    /// HTTP/2.
    static func upstreamProtocol(_ node: Node?, path p: String, https: Bool, _ r: ConfigReader) -> Bool {
        guard let node, let s = r.string(node, path: p) else { return false }
        switch s {
        case "http1": return false
        case "h2c":
            if https { r.problem(p, node, "h2c is HTTP/2 without TLS; with an https:// url say protocol: h2") }
            return true
        case "h2":
            if !https {
                r.problem(p, node, "h2 is HTTP/2 over TLS and needs an https:// url; say h2c for plain HTTP/2")
            }
            return true
        default:
            r.problem(p, node, "must be http1, h2c or h2")
            return false
        }
    }
}
