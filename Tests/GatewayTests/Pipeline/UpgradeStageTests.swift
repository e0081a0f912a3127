import Testing

@testable import Gateway
@testable import Reactor

/// The first stage of a proxied chain: a WebSocket upgrade of the wrong shape is refused
/// before its credentials are looked at; a good one becomes an upgrade; any other request
/// passes untouched.
@Suite("UpgradeStage: WebSocket upgrades refused or counted first")
struct UpgradeStageTests {
    static let upgrade: [(name: String, value: String)] = [
        ("Host", "a"), ("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
    ]

    /// RFC 6455 §4.2.2: a version the gateway does not speak is 426 with the one it does.
    @Test func anUpgradeInAnotherVersionIsRefusedAndClosed() throws {
        let fields = Self.upgrade.map { $0.name == "Sec-WebSocket-Version" ? (name: $0.name, value: "14") : $0 }
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/ws", fields: fields)
        #expect(h.run(try #require(h.stage(UpgradeStage.self))).answerStatus == 426)
        #expect(h.transport.closeAfter)
        #expect(h.transport.head?.fields.first("Sec-WebSocket-Version") == "13")
        #expect(!h.request.context.kind.isUpgrade)
    }

    @Test func aGoodUpgradeGoesOnAsAnUpgrade() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/ws", fields: Self.upgrade)
        #expect(h.run(try #require(h.stage(UpgradeStage.self))).proceeds)
        #expect(h.request.context.kind.isUpgrade)
        #expect(h.worker.services.proxying.tunnels.pending == 1, "counted against the tunnel cap until answered")
    }

    @Test func aPlainRequestPassesAsAProxiedOne() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/x")
        #expect(h.run(try #require(h.stage(UpgradeStage.self))).proceeds)
        #expect(!h.request.context.kind.isUpgrade && h.transport.status == 0)
    }
}
