import Foundation
import OAuth
import Reactor
import Yams

/// The `listen` section (addresses, TLS, HTTP/2) and the `limits` section (sizes, timeouts,
/// the connection cap): what the engine's servers are built from.
extension ConfigParser {
    static func listeners(_ node: Node?, _ r: ConfigReader) -> [ListenerConfig] {
        guard let node else { return [] }
        let items: [(Node, String)]
        if case .sequence(let seq) = node {
            items = seq.enumerated().map { ($1, "listen[\($0)]") }
        } else {
            items = [(node, "listen")]
        }
        var out: [ListenerConfig] = []
        for (item, p) in items {
            var keys = ListenerKeys(address: item)
            if case .mapping = item {
                guard let m = r.mapping(item, path: p, section: .listen) else { continue }
                keys.address = nil
                ListenerConfig.keyTable.read(m, into: &keys, path: p, r)
            }
            guard let addressNode = keys.address else {
                r.problem(p, item, "needs address: host:port")
                continue
            }
            guard let s = r.string(addressNode, path: p) else { continue }
            guard let a = ConfigValues.socketAddress(s) else {
                r.problem(p, addressNode, "\"\(s)\" is not host:port (e.g. 0.0.0.0:8080)")
                continue
            }
            out.append(ListenerConfig(address: a, tls: keys.tls?.value, http2: keys.http2))
        }
        return out
    }

    /// `admin_listen`: `host:port`, `off`, or `{ address, tls }`: the admin endpoints over
    /// TLS, with the same profiles, certificates and rotation as a public listener's.
    static func adminListener(_ node: Node, _ cfg: inout GatewayConfig, _ r: ConfigReader) {
        var keys = ListenerKeys(address: node)
        if case .mapping = node {
            guard let m = r.mapping(node, path: "admin_listen", section: .adminListen) else { return }
            keys.address = nil
            ListenerConfig.adminKeyTable.read(m, into: &keys, path: "admin_listen", r)
            guard keys.address != nil else {
                r.problem("admin_listen", node, "needs address: host:port")
                return
            }
            if let tls = keys.tls { cfg.adminTLS = tls.value }
        }
        guard let addressNode = keys.address, let s = r.string(addressNode, path: "admin_listen") else { return }
        if s == "off" {
            cfg.adminListen = nil
            cfg.adminTLS = nil
        } else if let a = ConfigValues.socketAddress(s) {
            cfg.adminListen = a
        } else {
            r.problem("admin_listen", addressNode, "\"\(s)\" is not host:port (or off)")
        }
    }

    /// `limits:`, the keys of `Limits.keyTable`.
    static func limits(_ node: Node, _ r: ConfigReader) -> Limits {
        var l = Limits()
        guard let m = r.mapping(node, path: "limits", section: .limits) else { return l }
        Limits.keyTable.read(m, into: &l, path: "limits", r)
        return l
    }
}
