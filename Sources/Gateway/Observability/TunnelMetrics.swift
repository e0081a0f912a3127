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

    func write(to out: inout PrometheusText) {
        out.single("tokengate_tunnels_open", .gauge, help: "Open tunnels (WebSocket connections after a 101).", open)
        out.labelled(
            "tokengate_tunnel_bytes_total", .counter, help: "Bytes carried by tunnels, by direction.",
            label: "direction", [("to_upstream", bytesToUpstream), ("to_client", bytesToClient)])
        out.labelled(
            "tokengate_tunnel_closes_total", .counter, help: "Tunnels closed, by reason.",
            label: "reason", closes.sorted(by: { $0.key < $1.key }))
    }
}
