import Testing

@testable import Gateway

/// Whose share of the request spool a body counts in: the peer, or behind trusted proxies the
/// nearest forwarded address that is not one of them; an IPv6 client by its /64.
@Suite("Request spool: the client a body counts for")
struct ClientAddressTests {
    static let proxies = [CIDR("10.0.0.0/8")!, CIDR("192.0.2.1")!]

    static func forwarded(_ chain: String) -> ForwardedHeaders {
        ForwardedHeaders(forwardedFor: chain, forwardedProto: "https", forwardedHost: nil, requestID: "r")
    }

    @Test func anUntrustedPeerIsItself() {
        #expect(
            ClientAddress.of(Self.forwarded("198.51.100.9"), peerTrusted: false, trustedProxies: Self.proxies)
                == "198.51.100.9")
    }

    @Test(arguments: [
        // What a client wrote left of the first untrusted address is its own writing.
        ("6.6.6.6, 203.0.113.7, 10.1.2.3", "203.0.113.7"),
        ("203.0.113.7,192.0.2.1, 10.0.0.1", "203.0.113.7"),
        // Every hop trusted: the leftmost.
        ("10.9.9.9, 10.0.0.1", "10.9.9.9"),
        ("2001:db8:1:2:aa:bb:cc:dd, 10.0.0.1", "2001:db8:1:2::/64")
    ])
    func throughTrustedProxiesTheNearestUntrustedAddress(chain: String, client: String) {
        #expect(ClientAddress.of(Self.forwarded(chain), peerTrusted: true, trustedProxies: Self.proxies) == client)
    }

    /// RFC 7239 §6 nodes: a port or brackets a proxy wrote (Azure Application Gateway writes
    /// `IP:port`) make no client of their own, and a trusted proxy written so is still trusted.
    @Test(arguments: [
        ("203.0.113.7:51234, 10.0.0.1", "203.0.113.7"),
        ("203.0.113.7:443, 10.0.0.1:8080", "203.0.113.7"),
        ("[2001:db8:1:2::9]:443, 10.0.0.1", "2001:db8:1:2::/64"),
        ("[2001:db8:1:2::9], 10.0.0.1", "2001:db8:1:2::/64"),
        ("\"[2001:db8:1:2::9]:8443\", 10.0.0.1", "2001:db8:1:2::/64"),
        ("203.0.113.7, 192.0.2.1:3000", "203.0.113.7"),
        ("10.9.9.9:1, 10.0.0.1", "10.9.9.9")
    ])
    func aPortOrBracketsAreNoClientOfTheirOwn(chain: String, client: String) {
        #expect(ClientAddress.of(Self.forwarded(chain), peerTrusted: true, trustedProxies: Self.proxies) == client)
    }

    @Test func whatIsNoNodeStaysAsWritten() {
        for text in ["unknown", "_hidden", "2001:db8::1", "[2001:db8::1", "[2001:db8::1]x", "1.2.3.4:123456", "a:1"] {
            #expect(ClientAddress.node(text) == text)
        }
    }

    /// A bare address is returned as written, without the walk; quotes, brackets or a port
    /// still take it.
    @Test func aBareAddressIsItsOwnNodeAndAnyOtherIsRead() {
        #expect(ClientAddress.node("198.51.100.9") == "198.51.100.9")
        #expect(ClientAddress.node("\"198.51.100.9\"") == "198.51.100.9")
        #expect(ClientAddress.node("198.51.100.9:80") == "198.51.100.9")
        #expect(ClientAddress.node("[2001:db8::1]:80") == "2001:db8::1")
        #expect(ClientAddress.node("\"[2001:db8::1]\"") == "2001:db8::1")
    }

    @Test func anIPv6ClientCountsByItsSlash64() {
        #expect(ClientAddress.grouped("2001:db8:1:2::1") == ClientAddress.grouped("2001:db8:1:2:ffff::9"))
        #expect(ClientAddress.grouped("2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(ClientAddress.grouped("::ffff:198.51.100.9") == "::ffff:198.51.100.9")
        #expect(ClientAddress.grouped("198.51.100.9") == "198.51.100.9")
    }
}
