import Reactor
import Testing

@testable import Gateway

@Suite("Proxy header rules (RFC 9110 §7.6.1) and X-Forwarded-* trust")
struct HeaderRulesTests {
    @Test(
        "hop-by-hop and recomputed request headers do not pass",
        arguments: [
            "Connection", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Proxy-Authorization",
            "Proxy-Connection", "proxy-anything", "Host", "Content-Length", "X-Forwarded-For", "x-forwarded-proto",
            "X-Forwarded-Host", "X-Request-Id", "Forwarded"
        ])
    func dropped(_ name: String) {
        #expect(!HeaderRules.forwardsRequestHeader(name, listed: [], reservedPrefix: nil))
    }

    @Test func passesEndToEndHeaders() {
        for name in ["Accept", "Authorization", "Cookie", "traceparent", "tracestate", "Content-Type", "X-Custom"] {
            #expect(HeaderRules.forwardsRequestHeader(name, listed: [], reservedPrefix: nil))
        }
    }

    @Test(
        "override headers pass only from a trusted proxy",
        arguments: [
            "X-Original-URL", "X-Original-URI", "X-Forwarded-Uri", "X-Forwarded-Path", "X-Envoy-Original-Path",
            "X-Host",
            "Client-IP", "X-Originating-IP", "X-Remote-IP", "X-Remote-Addr", "X-Forwarded-Method", "X-Original-Method",
            "x-envoy-anything", "X-Auth-Request-User", "CF-Connecting-IP"
        ])
    func overrideHeadersNeedATrustedPeer(_ name: String) {
        #expect(!HeaderRules.forwardsRequestHeader(name, listed: [], reservedPrefix: nil))
        #expect(HeaderRules.forwardsRequestHeader(name, listed: [], reservedPrefix: nil, peerTrusted: true))
    }

    @Test func configAddsOverrideHeaders() {
        let extra = [Array("x-my-path".utf8)]
        #expect(
            !HeaderRules.forwardsRequestHeader("X-My-Path", listed: [], reservedPrefix: nil, trustedOnlyExtra: extra))
        #expect(
            HeaderRules.forwardsRequestHeader(
                "X-My-Path", listed: [], reservedPrefix: nil, peerTrusted: true, trustedOnlyExtra: extra))
        #expect(HeaderRules.forwardsRequestHeader("X-My-Path", listed: [], reservedPrefix: nil))
        // Near misses of a family prefix are ordinary headers.
        #expect(HeaderRules.forwardsRequestHeader("X-Envoyage", listed: [], reservedPrefix: nil))
    }

    @Test func connectionListedHeadersAreHopByHop() {
        let fields = HTTP1Fields([("Connection", "close, X-Secret ,  x-other"), ("connection", "Keep-Alive,,\tUpgrade")]
        )
        let listed = HeaderRules.connectionTokens(fields)
        // keep-alive and upgrade are always dropped; they need no entry of their own.
        #expect(listed.map { String(decoding: $0, as: UTF8.self) } == ["close", "x-secret", "x-other"])
        #expect(HeaderRules.connectionLists(fields, Array("upgrade".utf8)))
        #expect(!HeaderRules.connectionLists(fields, Array("x-absent".utf8)))
        #expect(!HeaderRules.forwardsRequestHeader("X-Secret", listed: listed, reservedPrefix: nil))
        #expect(!HeaderRules.forwardsResponseHeader("X-Other", listed: listed))
    }

    @Test func underscoreLookalikesAndRoutingHeadersAreDropped() {
        for name in ["X_Forwarded_User", "X_Auth_Role", "Content_Length"] {
            #expect(!HeaderRules.forwardsRequestHeader(name, listed: [], reservedPrefix: nil))
        }
        for name in [
            "X-Original-URL", "X-Rewrite-URL", "X-HTTP-Method-Override", "X-Real-IP", "True-Client-IP",
            "X-Forwarded-Port"
        ] {
            #expect(!HeaderRules.forwardsRequestHeader(name, listed: [], reservedPrefix: nil), "\(name)")
        }
        #expect(!HeaderRules.forwardsRequestHeader("Expect", listed: [], reservedPrefix: nil))
    }

    @Test func reservedPrefixIsStripped() {
        #expect(!HeaderRules.forwardsRequestHeader("X-Auth-User", listed: [], reservedPrefix: "x-auth-"))
        #expect(HeaderRules.forwardsRequestHeader("X-Authorization-Hint", listed: [], reservedPrefix: "x-auth-"))
    }

    @Test func responseFraming() {
        #expect(HeaderRules.forwardsResponseHeader("Content-Length", listed: []))
        #expect(!HeaderRules.forwardsResponseHeader("Transfer-Encoding", listed: []))
        #expect(!HeaderRules.forwardsResponseHeader("X-Request-Id", listed: []))
        #expect(HeaderRules.forwardsResponseHeader("Set-Cookie", listed: []))
    }

    func inbound(trusted: Bool) -> ForwardedHeaders.Inbound {
        .init(
            peer: "10.1.2.3", peerTrusted: trusted, scheme: "http", host: "gw.example.com",
            xForwardedFor: ["203.0.113.9"], xForwardedProto: "https", xForwardedHost: "public.example.com",
            xRequestID: "abc-123")
    }

    @Test func untrustedPeerCannotSetForwardedHeaders() {
        let f = ForwardedHeaders.compute(inbound(trusted: false), newRequestID: { "generated" })
        #expect(f.forwardedFor == "10.1.2.3")
        #expect(f.forwardedProto == "http")
        #expect(f.forwardedHost == "gw.example.com")
        #expect(f.requestID == "generated")
    }

    @Test func trustedProxyValuesAreKeptAndExtended() {
        let f = ForwardedHeaders.compute(inbound(trusted: true), newRequestID: { "generated" })
        #expect(f.forwardedFor == "203.0.113.9, 10.1.2.3")
        #expect(f.forwardedProto == "https")
        #expect(f.forwardedHost == "public.example.com")
        #expect(f.requestID == "abc-123")
    }

    @Test func trustedButMalformedValuesAreReplaced() {
        var i = inbound(trusted: true)
        i.xForwardedProto = "gopher"
        i.xRequestID = "bad id\r\nX: y"
        i.xForwardedHost = "evil.com/path"
        let f = ForwardedHeaders.compute(i, newRequestID: { "generated" })
        #expect(f.forwardedProto == "http")
        #expect(f.requestID == "generated")
        #expect(f.forwardedHost == "gw.example.com")
    }

    @Test func cidr() {
        #expect(CIDR("10.0.0.0/8")!.contains("10.255.1.2"))
        #expect(!CIDR("10.0.0.0/8")!.contains("11.0.0.1"))
        #expect(CIDR("127.0.0.1")!.contains("127.0.0.1"))
        #expect(CIDR("127.0.0.1")!.contains("::ffff:127.0.0.1"))
        #expect(CIDR("::1/128")!.contains("::1"))
        #expect(CIDR("fd00::/8")!.contains("fd12::1"))
        #expect(!CIDR("192.168.0.0/16")!.contains("::1"))
        #expect(CIDR("10.0.0.0/33") == nil)
        #expect(CIDR("nope") == nil)
        #expect(CIDR("172.16.0.0/12")!.contains("172.31.255.255"))
        #expect(!CIDR("172.16.0.0/12")!.contains("172.32.0.0"))
    }
}
