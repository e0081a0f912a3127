import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// The stages toward the upstream: the request made and its body checked, room on the pool,
/// the call started.
@Suite("Upstream stages: the request made, the pool's room, the call")
struct UpstreamStagesTests {
    static func admitted(_ h: StageHarness) {
        h.request.admission = Admission(
            identity: [("X-User", "alice")], session: false, body: nil, claims: JSONObject())
    }

    @Test func aBodilessRequestGoesOnUnbufferedWithItsIdentityHeaders() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/x")
        Self.admitted(h)
        #expect(h.run(try #require(h.stage(RequestBufferingStage.self))).proceeds)
        #expect(h.request.spooledBody == nil, "nothing to read first")
        // What ProxyStage sends: the admission's identity headers on the client's request.
        let upstream = h.request.forwarding.request(
            h.request.admitted, ex: h.request.exchange, ctx: h.request.context, now: 0)
        #expect(upstream.fields.first("X-User") == "alice")
    }

    @Test func aBodyAnnouncedLargerThanMaxBodySizeIs413BeforeTheUpstream() throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "POST", "/public/x", fields: [("Host", "a")],
            body: Array(repeating: UInt8(ascii: "a"), count: 2048))
        Self.admitted(h)
        #expect(h.run(try #require(h.stage(RequestBufferingStage.self))).answerStatus == 413)
        #expect(h.transport.closeAfter && h.request.spooledBody == nil)
    }

    @Test func aClientGoneWhileDecidingIsNotProxied() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/x")
        Self.admitted(h)
        h.transport.isConnected = false
        #expect(h.run(try #require(h.stage(RequestBufferingStage.self))).answerStatus == 499)
    }

    /// `max_connections: 1`, `max_pending: 0`: with the one connection taken, the next
    /// request gets 503 with Retry-After, and the upstream never hears of it.
    @Test func aFullPoolWithNoQueueIs503() throws {
        let w = try testWorker(PipelineConfigs.yaml)
        let first = try StageHarness(w, "GET", "/public/a")
        Self.admitted(first)
        first.run(try #require(first.stage(RequestBufferingStage.self)))
        #expect(first.run(try #require(first.stage(UpstreamQueueStage.self))).proceeds)
        #expect(first.run(try #require(first.stage(ProxyStage.self))).suspends, "the call holds the request")
        let second = try StageHarness(w, "GET", "/public/b")
        Self.admitted(second)
        second.run(try #require(second.stage(RequestBufferingStage.self)))
        #expect(second.run(try #require(second.stage(UpstreamQueueStage.self))).answerStatus == 503)
        #expect(second.transport.head?.fields.first("Retry-After") == WorkerServices.upstreamRetryAfter)
        #expect(second.json["error"] as? String == "temporarily_unavailable")
    }
}
