import Foundation
import Reactor

/// Requests that ask to switch protocols (RFC 9110 §7.8), as the request path sees them:
/// which ones are upgrades, which are refused before authentication, and the upstream
/// request that carries the upgrade on (the hop-by-hop `Connection` and `Upgrade` are
/// stripped from every forwarded request, then put back for this one hop on purpose).
/// WebSocket (RFC 6455) is the one protocol the gateway switches to; any other `Upgrade`
/// (h2c, TLS/1.x) is ignored, as §7.8 lets a server do, and the request served as usual.
enum UpgradeExchange {
    static let upgradeOption = Array("upgrade".utf8)

    /// `Connection` lists `upgrade` and `Upgrade` lists `websocket` (case-insensitive).
    static func asksWebSocket(_ head: HTTPRequestHead) -> Bool {
        let fields = head.fields
        guard fields.first("Upgrade") != nil,
            HeaderRules.connectionLists(fields, upgradeOption)
        else { return false }
        for value in fields.values("Upgrade") {
            for token in value.split(separator: ",") {
                let name = token.split(separator: "/").first.map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                }
                if name == "websocket" { return true }
            }
        }
        return false
    }

    /// Why a WebSocket upgrade cannot be served on this route, if it cannot: the route does
    /// not allow it, or the request is not the GET over HTTP/1.1 without content that RFC
    /// 6455 §4.1 describes (a body would be bytes of unknown meaning ahead of the tunnel).
    static func refusal(_ head: HTTPRequestHead, route: RouteConfig, body: RequestBody) -> (
        status: Int, description: String
    )? {
        guard route.upgrades.contains("websocket") else {
            return (400, "this route does not accept WebSocket upgrades (upgrades: [])")
        }
        guard head.method == .GET, head.version == (1, 1) else {
            return (400, "a WebSocket upgrade is a GET request over HTTP/1.1 (RFC 6455 §4.1)")
        }
        guard body.framing == .none else {
            return (400, "a WebSocket upgrade request has no content")
        }
        return nil
    }

    /// The upstream request with the upgrade on it: `Connection: upgrade` and
    /// `Upgrade: websocket`; the `Sec-WebSocket-*` fields went through as end-to-end fields.
    static func upstreamRequest(_ request: consuming UpstreamCall.Request) -> UpstreamCall.Request {
        var out = request
        out.fields.append("Connection", "upgrade")
        out.fields.append("Upgrade", "websocket")
        out.upgrade = true
        return out
    }
}
