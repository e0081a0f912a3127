/// A cluster node's answer that a slot is served elsewhere (cluster specification,
/// "Redirection and resharding"): `-MOVED slot host:port` (for good: update the slot map) or
/// `-ASK slot host:port` (this one command, during a migration: send `ASKING` first).
struct RedisRedirect: Equatable {
    enum Kind: Equatable { case moved, ask }

    let kind: Kind
    let slot: Int
    /// Empty when the node does not know its own endpoint (Redis 7 `cluster-preferred-
    /// endpoint-type unknown-endpoint`): the answering node's host is meant.
    let host: String
    let port: UInt16

    init(kind: Kind, slot: Int, host: String, port: UInt16) {
        self.kind = kind
        self.slot = slot
        self.host = host
        self.port = port
    }

    /// Parses an error reply's text; nil for any other error. The port follows the last `:`,
    /// since an IPv6 host comes without brackets.
    init?(_ message: String) {
        let parts = message.split(separator: " ")
        guard parts.count == 3 else { return nil }
        switch parts[0] {
        case "MOVED": kind = .moved
        case "ASK": kind = .ask
        default: return nil
        }
        guard let slot = Int(parts[1]), (0..<RedisHashSlot.count).contains(slot),
            let colon = parts[2].lastIndex(of: ":"),
            let port = UInt16(parts[2][parts[2].index(after: colon)...]), port > 0
        else { return nil }
        self.slot = slot
        self.host = String(parts[2][..<colon])
        self.port = port
    }
}
