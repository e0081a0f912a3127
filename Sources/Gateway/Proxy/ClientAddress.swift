/// The client a request's body counts for (`limits.request_spool_per_client`): the address it
/// came from, as far as the gateway can trust it.
///   - From a peer that is not a trusted proxy: the peer.
///   - Through trusted proxies: the nearest address in X-Forwarded-For that is not one of
///     `trusted_proxies`, read from the right (each proxy appends the address it saw, so
///     what lies left of the first untrusted one is the client's own writing); the leftmost
///     if every one is trusted.
/// An IPv6 client counts by its /64, the prefix RFC 7421 gives one link (a host picks any
/// address in it, RFC 8981), so that one source cannot take a share per address.
enum ClientAddress {
    static func of(_ forwarded: ForwardedHeaders, peerTrusted: Bool, trustedProxies: [CIDR]) -> String {
        guard peerTrusted else { return grouped(forwarded.forwardedFor) }
        let chain = forwarded.forwardedFor.split(separator: ",").map { $0.trimmingSpaces }
        for address in chain.reversed() where !trustedProxies.contains(where: { $0.contains(address) }) {
            return grouped(address)
        }
        return grouped(chain.first ?? forwarded.forwardedFor)
    }

    /// An IPv6 address as its /64 (`2001:db8:1:2::/64`); any other text as it is.
    static func grouped(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")), let bytes = CIDR.parseAddress(address), bytes.count == 16,
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
