import JOSE

/// MCP 2026-07-28's `subscriptions/listen`: one POST, answered by an SSE stream of change
/// notifications, which the gateway ends at the route's `listen_timeout` or the token's
/// expiry (StreamEnd). The spec closes a subscription gracefully with the listen request's
/// result as the stream's last event, stamped with the subscription's id (the request's);
/// the gateway ends it the same way, so a client re-listens without assuming it missed
/// anything. A client that reads no result sees the stream drop, and re-listens too.
enum MCPListen {
    static let method = "subscriptions/listen"

    /// The longest id a closing event repeats: it is kept for the stream's life.
    static let maxIDBytes = 256

    /// The last event of a stream the gateway ends: `{"jsonrpc":"2.0","id":ID,"result":
    /// {"_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}` as an SSE `message` event;
    /// nil for an id longer than `maxIDBytes` (such a stream just ends).
    static func closingEvent(id: JSONValue) -> [UInt8]? {
        guard JSONSerializer.serialize(id).utf8.count <= maxIDBytes else { return nil }
        var meta = JSONObject()
        meta["io.modelcontextprotocol/subscriptionId"] = id
        var result = JSONObject()
        result["_meta"] = .object(meta)
        var message = JSONObject()
        message["jsonrpc"] = .string("2.0")
        message["id"] = id
        message["result"] = .object(result)
        return Array("event: message\r\ndata: \(JSONSerializer.serialize(.object(message)))\r\n\r\n".utf8)
    }
}
