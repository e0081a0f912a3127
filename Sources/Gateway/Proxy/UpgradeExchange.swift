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
    /// not allow it, or the request is not the opening handshake RFC 6455 §4.1 describes: a
    /// GET over HTTP/1.1 without content (a body would be bytes of unknown meaning ahead of
    /// the tunnel), one `Sec-WebSocket-Key` that is 16 bytes in base64, and one
    /// `Sec-WebSocket-Version: 13`. Nothing reaches the upstream when one is found: the
    /// upstream's 101 is later checked against that key (`WebSocketHandshake`), so a request
    /// without one could never open a tunnel honestly.
    static func refusal(_ head: HTTPRequestHead, route: RouteConfig, body: RequestBody) -> (
        status: Int, description: String, headers: [(String, String)]
    )? {
        guard route.options.upgrade.protocols.contains("websocket") else {
            return (400, "this route does not accept WebSocket upgrades (upgrades: [])", [])
        }
        guard head.method == .GET, head.version == (1, 1) else {
            return (400, "a WebSocket upgrade is a GET request over HTTP/1.1 (RFC 6455 §4.1)", [])
        }
        guard body.framing == .none else {
            return (400, "a WebSocket upgrade request has no content", [])
        }
        // The parser has taken the optional whitespace off; any other byte is the key's.
        let keys = head.fields.values("Sec-WebSocket-Key")
        guard keys.count == 1, WebSocketHandshake.isValidKey(keys[0]) else {
            return (400, "a WebSocket upgrade needs one Sec-WebSocket-Key of 16 bytes in base64 (RFC 6455 §4.1)", [])
        }
        // RFC 6455 §4.2.2: a version the server does not speak is answered 426 with the
        // versions it does; a missing one is not a handshake at all (§4.2.1 item 6).
        let versions = head.fields.values("Sec-WebSocket-Version")
        guard !versions.isEmpty else {
            return (400, "a WebSocket upgrade needs Sec-WebSocket-Version: 13 (RFC 6455 §4.1)", [])
        }
        guard versions.count == 1, versions[0] == "13" else {
            return (
                426, "the only WebSocket version spoken here is 13 (RFC 6455 §4.4)", [("Sec-WebSocket-Version", "13")]
            )
        }
        // A handshake field named in Connection would be dropped as hop-by-hop on the way up.
        var listsHandshakeField = false
        HeaderRules.forEachConnectionOption(head.fields) { option in
            if HeaderRules.hasPrefix(option, handshakePrefix) { listsHandshakeField = true }
        }
        if listsHandshakeField {
            return (400, "Connection may not name the WebSocket handshake's fields", [])
        }
        return nil
    }

    static let handshakePrefix = Array("sec-websocket-".utf8)

    /// The client's key, as `refusal` accepted it: the accept the client gets is this one's.
    static func key(_ head: HTTPRequestHead) -> String { head.fields.first("Sec-WebSocket-Key") ?? "" }

    /// The upstream request with the upgrade on it: `Connection: upgrade`, `Upgrade:
    /// websocket`, and `key`, a key of the gateway's own (`WebSocketHandshake.freshKey`) in
    /// place of the client's; the other `Sec-WebSocket-*` request fields go through as
    /// end-to-end fields, but a `Sec-WebSocket-Accept`, which only a server sends.
    static func upstreamRequest(_ request: consuming UpstreamCall.Request, key: String) -> UpstreamCall.Request {
        var out = request
        if var forwarded = out.forwarded {
            var doomed: [Int] = []
            for name in ["Sec-WebSocket-Key", "Sec-WebSocket-Accept"] {
                forwarded.forEachValue(named: name) { index, _ in doomed.append(index) }
            }
            for index in doomed { forwarded.drop(index) }
            out.forwarded = forwarded
        }
        out.fields.append("Connection", "upgrade")
        out.fields.append("Upgrade", "websocket")
        out.fields.append("Sec-WebSocket-Key", key)
        out.upgrade = true
        return out
    }
}

extension UpgradeExchange {
    /// A 101 from the upstream that does not answer the gateway's key.
    struct Refusal: Error {
        let response: GatewayResponse
    }

    /// The 101 the client hears, once the upstream's answered the gateway's key (RFC 6455
    /// §4.1; any other is refused, as what follows it on the wire is of unknown meaning): the
    /// upstream's fields as the client may have them (`fields`: the forwarded and the
    /// gateway's own), `Sec-WebSocket-Accept` answering the client's own key (§4.2.2).
    static func switching(
        _ head: HTTPResponseHead, _ context: RequestContext, _ request: HTTPRequestHead,
        fields: (HTTPResponseHead) -> (HTTP1ForwardedFields, HTTP1Fields?)
    ) -> Result<HTTPResponseHead, Refusal> {
        if let refusal = WebSocketHandshake.refusal(of: head.fields, key: context.tunnel.upstreamKey) {
            return .failure(
                Refusal(
                    response: ErrorResponse.badGateway(
                        "the upstream did not complete the WebSocket handshake", context.requestID,
                        detail: "upstream 101: \(refusal.rawValue)")))
        }
        // The upstream answered the gateway's key; the client hears the answer to its own.
        context.response.dropped.append("Sec-WebSocket-Accept")
        let (forwarded, own) = fields(head)
        var out = own ?? HTTP1Fields()
        out.append("Upgrade", "websocket")
        out.append("Sec-WebSocket-Accept", WebSocketHandshake.accept(forKey: key(request)))
        return .success(
            HTTPResponseHead(
                status: 101, fields: out, forwarded: forwarded, lastField: ("X-Request-Id", context.requestID)))
    }
}
