import Glibc

/// An IPv4 or IPv6 network (`10.0.0.0/8`, `::1/128`, or a single address) — the form of
/// `trusted_proxies` entries.
struct CIDR: Sendable, Equatable, CustomStringConvertible {
    let bytes: [UInt8]
    let prefix: Int
    let description: String

    init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let addr = CIDR.parseAddress(String(parts[0])) else { return nil }
        let maxBits = addr.count * 8
        var prefix = maxBits
        if parts.count == 2 {
            guard let p = Int(parts[1]), p >= 0, p <= maxBits else { return nil }
            prefix = p
        }
        bytes = addr
        self.prefix = prefix
        description = text
    }

    /// Whether `address` (numeric text as the socket layer reports it) is inside.
    func contains(_ address: String) -> Bool {
        guard var addr = CIDR.parseAddress(address) else { return false }
        // An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d.
        if addr.count == 16, bytes.count == 4, addr[0..<10].allSatisfy({ $0 == 0 }), addr[10] == 0xff, addr[11] == 0xff
        {
            addr = Array(addr[12...])
        }
        guard addr.count == bytes.count else { return false }
        var bits = prefix
        for i in 0..<bytes.count where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xff : ~(0xff >> UInt8(bits))
            if addr[i] & mask != bytes[i] & mask { return false }
            bits -= 8
        }
        return true
    }

    /// The address's bytes in network order: 4 for IPv4, 16 for IPv6.
    static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            // `s_addr` holds the bytes in network order: read as big-endian, the first is the top.
            let a = UInt32(bigEndian: v4.s_addr)
            return [
                UInt8(truncatingIfNeeded: a >> 24), UInt8(truncatingIfNeeded: a >> 16),
                UInt8(truncatingIfNeeded: a >> 8), UInt8(truncatingIfNeeded: a)
            ]
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            let b = v6.__in6_u.__u6_addr8
            return [b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15]
        }
        return nil
    }
}
