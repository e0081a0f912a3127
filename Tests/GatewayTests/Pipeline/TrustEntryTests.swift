import Testing

@testable import Gateway
@testable import Reactor

/// Every request's first stage: only a trusted proxy's X-Forwarded-* and X-Request-Id are
/// believed, and what is decided of a peer holds for its connection until the next config.
@Suite("TrustEntry: whose forwarded fields are believed")
struct TrustEntryTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: public
            match: { path_prefix: / }
            upstream: app
            auth: none
        """

    func context(_ w: Worker, peer: String) -> RequestContext {
        let fields = [
            ("Host", "a"), ("X-Request-Id", "client-chosen-id"), ("X-Forwarded-For", "203.0.113.9"),
            ("X-Forwarded-Proto", "https")
        ].map { (name: $0.0, value: $0.1) }
        let (ex, _) = InMemoryTransport.exchange("GET", "/", fields: fields, peer: peer)
        let trust = TrustEntry(services: w.services)
        return trust.context(ex, trusted: trust.peerTrusted(ex.connection), host: "a", start: 0)
    }

    @Test func aTrustedProxysForwardedFieldsAreKept() throws {
        let ctx = context(try testWorker(Self.yaml), peer: "10.1.2.3")
        #expect(ctx.behindTrustedProxy)
        #expect(ctx.requestID == "client-chosen-id")
        #expect(ctx.forwarded.forwardedProto == "https")
        #expect(ctx.forwarded.forwardedFor.hasPrefix("203.0.113.9"))
    }

    /// From the attacker's side: a client outside `trusted_proxies` cannot choose the request
    /// id the logs and the upstream see, nor the scheme or address the gateway reports.
    @Test func anUntrustedClientsForwardedFieldsAreIgnored() throws {
        let ctx = context(try testWorker(Self.yaml), peer: "192.0.2.7")
        #expect(!ctx.behindTrustedProxy)
        #expect(ctx.requestID != "client-chosen-id")
        #expect(ctx.forwarded.forwardedProto == "http")
        #expect(ctx.forwarded.forwardedFor == "192.0.2.7")
    }

    @Test func aConnectionsTrustIsDecidedAgainAfterAReload() throws {
        let w = try testWorker(Self.yaml)
        let connection = ClientConnection(peer: "10.1.2.3", isTLS: false)
        #expect(TrustEntry(services: w.services).peerTrusted(connection))
        w.apply(
            try ConfigParser.parse(
                yaml: Self.yaml.replacingOccurrences(of: "10.0.0.0/8", with: "172.16.0.0/12"), environment: [:],
                baseDirectory: "/", cores: 1
            ).get())
        #expect(!TrustEntry(services: w.services).peerTrusted(connection))
    }
}
