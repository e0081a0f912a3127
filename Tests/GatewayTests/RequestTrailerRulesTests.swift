import Testing

@testable import Gateway
@testable import Reactor

/// Which request trailer fields reach the upstream: end-to-end fields pass; what the head
/// would refuse, credentials, identity headers and the fields RFC 9110 §6.5.1 keeps out of
/// trailers do not, whatever their case.
@Suite("Request trailers: the gateway's rules")
struct RequestTrailerRulesTests {
    static func forwards(_ name: String, connectionListed: [String] = []) -> Bool {
        var config = GatewayConfig()
        config.strippedIdentityHeaders = [Array("x-user".utf8)]
        let policy = RouteResolver.Policy(config, router: Router(routes: []), plans: [])
        let bytes = Array(name.utf8)
        if connectionListed.isEmpty { return policy.forwardsTrailer(bytes.span) }
        let listed = DroppingTrailerPolicy(policy, dropped: connectionListed.map { Array($0.utf8) })
        return listed.forwardsTrailer(bytes.span)
    }

    /// A name the head's `Connection` field lists is hop-by-hop in the trailers too.
    @Test func aNameTheConnectionFieldListsIsDropped() {
        #expect(!Self.forwards("X-Checksum", connectionListed: ["x-checksum"]))
        #expect(Self.forwards("X-Other", connectionListed: ["x-checksum"]))
    }

    @Test(arguments: ["X-Checksum", "grpc-status-details-bin", "server-timing", "x-digest"])
    func endToEndFieldsPass(name: String) {
        #expect(Self.forwards(name))
    }

    @Test(arguments: [
        // an identity header, and credentials
        "X-User", "authorization", "Proxy-Authorization", "DPoP", "Cookie",
        // framing, routing, request modifiers and content metadata (RFC 9110 §6.5.1)
        "Host", "Content-Length", "Transfer-Encoding", "Content-Type", "Content-Encoding", "Range", "If-Match",
        "Expect", "Cache-Control", "Max-Forwards",
        // hop-by-hop, what the gateway sets itself, override headers and `_` names
        "Connection", "TE", "Trailer", "X-Forwarded-For", "X-Request-Id", "X-Original-URL", "X-Forwarded_User",
        "x-envoy-original-path"
    ])
    func restIsDropped(name: String) {
        #expect(!Self.forwards(name))
    }
}
