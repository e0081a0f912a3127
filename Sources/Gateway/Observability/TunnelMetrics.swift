/// Tunnel counters of one worker (and, added up, of the process): open tunnels, bytes
/// carried each way, closes by reason (`Tunnel.CloseReason`'s labels).
struct TunnelMetrics: Sendable {
    var open = 0
    var bytesToUpstream: UInt64 = 0
    var bytesToClient: UInt64 = 0
    var closes: [String: Int] = [:]

    mutating func add(_ o: TunnelMetrics) {
        open += o.open
        bytesToUpstream += o.bytesToUpstream
        bytesToClient += o.bytesToClient
        closes.merge(o.closes, uniquingKeysWith: +)
    }

    func prometheusText() -> String {
        var out = "# HELP tokengate_tunnels_open Open tunnels (WebSocket connections after a 101).\n# TYPE tokengate_tunnels_open gauge\ntokengate_tunnels_open \(open)\n"
        out += "# HELP tokengate_tunnel_bytes_total Bytes carried by tunnels, by direction.\n# TYPE tokengate_tunnel_bytes_total counter\n"
        out += "tokengate_tunnel_bytes_total{direction=\"to_upstream\"} \(bytesToUpstream)\n"
        out += "tokengate_tunnel_bytes_total{direction=\"to_client\"} \(bytesToClient)\n"
        out += "# HELP tokengate_tunnel_closes_total Tunnels closed, by reason.\n# TYPE tokengate_tunnel_closes_total counter\n"
        for (k, v) in closes.sorted(by: { $0.key < $1.key }) {
            out += "tokengate_tunnel_closes_total{reason=\"\(k)\"} \(v)\n"
        }
        return out
    }
}
