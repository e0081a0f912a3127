internal import COpenSSL

/// The opening handshake's proof of a WebSocket server (RFC 6455 §4): the key a client
/// sends and the accept value the server must answer with. A gateway that opened a tunnel
/// on any 101 would let an upstream that answers 101 without switching (a status-echoing
/// endpoint, a framework's catch-all) turn the connection into a raw pipe past every check
/// of the gateway ("WebSocket smuggling"); with the key checked on the way in and the
/// accept checked on the way out, only a server that read the handshake as one opens it.
public enum WebSocketHandshake {
    /// RFC 6455 §1.3: the GUID the server appends to the key before hashing.
    static let guid = Array("258EAFA5-E914-47DA-95CA-C5AB0DC85B11".utf8)

    /// RFC 6455 §4.1: "a nonce consisting of a randomly selected 16-byte value that has been
    /// base64-encoded": 22 base64 characters and "==", the last character's unused low bits
    /// zero (the one encoding of 16 bytes, RFC 4648 §3.5).
    public static func isValidKey(_ key: String) -> Bool {
        let b = Array(key.utf8)
        guard b.count == 24, b[22] == UInt8(ascii: "="), b[23] == UInt8(ascii: "=") else { return false }
        for c in b[..<22] where sextet(c) == nil { return false }
        return sextet(b[21])! & 0x0F == 0
    }

    /// A key of the gateway's own for the upstream hop (RFC 6455 §4.1: 16 random bytes in
    /// base64, from OpenSSL's RAND_bytes). The client's key is its own to choose, so an
    /// accept computed from it proves nothing: an upstream that echoes caller-chosen headers
    /// could answer it. Only an upstream that read this key can answer this one.
    public static func freshKey() -> String {
        var nonce = [UInt8](repeating: 0, count: 16)
        precondition(RAND_bytes(&nonce, 16) == 1, "RAND_bytes failed")
        var out = [UInt8](repeating: 0, count: 25)
        let n = EVP_EncodeBlock(&out, nonce, 16)
        return String(decoding: out[..<Int(n)], as: UTF8.self)
    }

    /// The `Sec-WebSocket-Accept` a server answers `key` with (RFC 6455 §4.2.2 item 5.4):
    /// base64 of the SHA-1 of the key and the GUID.
    public static func accept(forKey key: String) -> String {
        let input = Array(key.utf8) + guid
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        precondition(EVP_Digest(input, input.count, &digest, &length, EVP_sha1(), nil) == 1, "EVP_Digest(SHA-1) failed")
        var out = [UInt8](repeating: 0, count: 4 * ((Int(length) + 2) / 3) + 1)
        let n = EVP_EncodeBlock(&out, digest, Int32(length))
        return String(decoding: out[..<Int(n)], as: UTF8.self)
    }

    /// What is wrong with an upstream's 101 to a request that carried `key`, if anything
    /// (RFC 6455 §4.1, the client's checks of the server's handshake, items 2–4).
    public enum Refusal: String, Sendable, Equatable {
        case noUpgradeWebSocket = "the 101 has no Upgrade: websocket"
        case noConnectionUpgrade = "the 101's Connection does not list upgrade"
        case badAccept = "the 101's Sec-WebSocket-Accept does not answer the key"
    }

    public static func refusal(of response: HTTP1Fields, key: String) -> Refusal? {
        guard response.values("Upgrade").contains(where: { lists($0, "websocket") }) else {
            return .noUpgradeWebSocket
        }
        guard response.values("Connection").contains(where: { lists($0, "upgrade") }) else {
            return .noConnectionUpgrade
        }
        let accepts = response.values("Sec-WebSocket-Accept")
        guard accepts.count == 1, trimmed(accepts[0]) == accept(forKey: key) else { return .badAccept }
        return nil
    }

    /// A comma-separated field value holds `token`, compared case-insensitively (RFC 9110
    /// §5.6.1; a protocol's "/version" ignored, RFC 9110 §7.8).
    private static func lists(_ value: String, _ token: String) -> Bool {
        value.split(separator: ",").contains { item in
            let name = item.split(separator: "/", maxSplits: 1).first.map { trimmed(String($0)) } ?? ""
            return name.lowercased() == token
        }
    }

    private static func trimmed(_ s: String) -> String {
        var bytes = Substring(s).utf8[...]
        while let f = bytes.first, f == 0x20 || f == 0x09 { bytes = bytes.dropFirst() }
        while let l = bytes.last, l == 0x20 || l == 0x09 { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func sextet(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
