/// The client a request's body counts for (`limits.request_spool_per_client`): the address it
/// came from, as far as the gateway can trust it.
///   - From a peer that is not a trusted proxy: the peer.
///   - Through trusted proxies: the nearest address in X-Forwarded-For that is not one of
///     `trusted_proxies`, read from the right (each proxy appends the address it saw, so
///     what lies left of the first untrusted one is the client's own writing); the leftmost
///     if every one is trusted.
/// An IPv6 client counts by its /64, the prefix RFC 7421 gives one link (a host picks any
/// address in it, RFC 8981), so that one source cannot take a share per address.
/// Each entry is read as a node (`node`): a port or brackets a proxy wrote make no client of
/// their own.
enum ClientAddress {
    static func of(_ forwarded: ForwardedHeaders, peerTrusted: Bool, trustedProxies: [CIDR]) -> String {
        guard peerTrusted else { return grouped(node(forwarded.forwardedFor)) }
        let chain = forwarded.forwardedFor.split(separator: ",").map { node($0.trimmingSpaces) }
        for address in chain.reversed() where !trustedProxies.contains(where: { $0.contains(address) }) {
            return grouped(address)
        }
        return grouped(chain.first ?? node(forwarded.forwardedFor))
    }

    /// The address of an X-Forwarded-For entry written as RFC 7239 §6 writes a node: quotes
    /// dropped; `[v6]` and `[v6]:port` give v6; `v4:port` gives v4 (Azure Application
    /// Gateway writes its entries so). A bare IPv6 address, `unknown` or an obfuscated
    /// identifier stays as it is.
    static func node(_ entry: String) -> String {
        // The common entry, a bare IPv4 address (the peer's own, as the gateway writes it):
        // no quote, bracket or colon, so nothing below would change it. Read as bytes; the
        // steps below walk `Character`s, a grapheme break per step.
        if !holds(entry, { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: ":") }) {
            return entry
        }
        var text = Substring(entry)
        if text.count >= 2, text.first == "\"", text.last == "\"" { text = text.dropFirst().dropLast() }
        if text.first == "[" {
            guard let close = text.firstIndex(of: "]") else { return String(text) }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || Self.isPort(rest.dropFirst()) && rest.first == ":" else { return String(text) }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        let colons = text.utf8.count { $0 == UInt8(ascii: ":") }
        if colons == 1, let colon = text.firstIndex(of: ":"), Self.isPort(text[text.index(after: colon)...]),
            CIDR.parseAddress(String(text[..<colon]))?.count == 4
        {
            return String(text[..<colon])
        }
        return String(text)
    }

    /// Whether a byte of `text` is one `matches` takes, read in place: the UTF-8 view's own
    /// iterator costs tens of instructions a byte, and every buffered body asks this.
    private static func holds(_ text: String, _ matches: (UInt8) -> Bool) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.contains(where: matches) } ?? text.utf8.contains(where: matches)
    }

    /// RFC 7239 §6: `node-port = port / obfport`; a port here, 1 to 5 digits.
    private static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// An IPv6 address as its /64 (`2001:db8:1:2::/64`); any other text as it is.
    static func grouped(_ address: String) -> String {
        guard holds(address, { $0 == UInt8(ascii: ":") }), let bytes = CIDR.parseAddress(address), bytes.count == 16,
            !bytes[0..<10].allSatisfy({ $0 == 0 }) || bytes[10] != 0xff || bytes[11] != 0xff
        else { return address }
        var groups: [String] = []
        for i in stride(from: 0, to: 8, by: 2) {
            groups.append(String(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]), radix: 16))
        }
        return groups.joined(separator: ":") + "::/64"
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        var s = self[...]
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
