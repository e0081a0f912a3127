import Testing

@testable import Reactor

/// The opening handshake's key and accept (RFC 6455 §4), and every way an upstream's 101
/// can fail to be one.
@Suite("WebSocketHandshake")
struct WebSocketHandshakeTests {
    /// RFC 6455 §1.3's own example.
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    @Test func acceptIsTheRFCsExample() {
        #expect(WebSocketHandshake.accept(forKey: Self.key) == Self.accept)
    }

    @Test(
        "keys",
        arguments: [
            (key, true), ("AAAAAAAAAAAAAAAAAAAAAA==", true), ("+/+/+/+/+/+/+/+/+/+/+w==", true),
            ("dGhlIHNhbXBsZSBub25jZQ", false),  // no padding
            ("dGhlIHNhbXBsZSBub25jZR==", false),  // unused bits set: not the encoding of 16 bytes
            ("dGhlIHNhbXBsZSBub25j", false),  // 15 bytes
            ("dGhlIHNhbXBsZSBub25jZQ==AA==", false), ("dGhlIHNhbXBsZSBub25jZQ=", false),
            ("dGhlIHNhbXBsZSBub25jZQ-_", false),  // base64url, not base64
            ("dGhlIHNhbXBsZSBub25j\u{00e9}Q==", false), ("", false), ("========================", false)
        ])
    func keys(_ key: String, _ valid: Bool) {
        #expect(WebSocketHandshake.isValidKey(key) == valid)
    }

    static func fields(_ pairs: [(String, String)]) -> HTTP1Fields {
        var f = HTTP1Fields()
        for (n, v) in pairs { f.append(n, v) }
        return f
    }

    @Test func aRealServersAnswerIsAccepted() {
        for (upgrade, connection) in [
            ("websocket", "Upgrade"), ("WebSocket", "keep-alive, upgrade"), ("websocket/13", " UPGRADE ")
        ] {
            let f = Self.fields([
                ("Upgrade", upgrade), ("Connection", connection), ("Sec-WebSocket-Accept", " \(Self.accept) ")
            ])
            #expect(WebSocketHandshake.refusal(of: f, key: Self.key) == nil, "\(upgrade) / \(connection)")
        }
    }

    typealias Case = (fields: [(String, String)], why: WebSocketHandshake.Refusal)
    static let upgrade = ("Upgrade", "websocket")
    static let connection = ("Connection", "Upgrade")
    static let accepted = ("Sec-WebSocket-Accept", accept)
    static let notWebSocketAnswers: [Case] = [
        ([connection, accepted], .noUpgradeWebSocket),
        ([("Upgrade", "h2c"), connection, accepted], .noUpgradeWebSocket),
        ([("Upgrade", "websocketx"), connection, accepted], .noUpgradeWebSocket),
        ([upgrade, accepted], .noConnectionUpgrade),
        ([upgrade, ("Connection", "keep-alive"), accepted], .noConnectionUpgrade),
        ([upgrade, connection], .badAccept),
        ([upgrade, connection, ("Sec-WebSocket-Accept", "x")], .badAccept),
        // The accept of another key ("AAAAAAAAAAAAAAAAAAAAAA=="): a replayed handshake.
        ([upgrade, connection, ("Sec-WebSocket-Accept", "ICX+Yqv66kxgM0FcWaLWlFLwTAI=")], .badAccept),
        ([upgrade, connection, accepted, accepted], .badAccept),
        ([upgrade, connection, ("Sec-WebSocket-Accept", accept.lowercased())], .badAccept)
    ]

    @Test func answersThatAreNotAWebSocketServersAreRefused() {
        for c in Self.notWebSocketAnswers {
            #expect(WebSocketHandshake.refusal(of: Self.fields(c.fields), key: Self.key) == c.why, "\(c.fields)")
        }
    }
}
