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

    static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
