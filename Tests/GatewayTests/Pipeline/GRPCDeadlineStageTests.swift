import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// A gRPC call's `grpc-timeout` before its body is read: refused when gRPC does not allow it,
/// capped by the upstream's `timeout` (30 s here) when it does, and sent upstream as capped.
@Suite("gRPC deadlines: checked and capped before the upstream")
struct GRPCDeadlineStageTests {
    static func harness(_ timeouts: [String], contentType: String = "application/grpc") throws -> StageHarness {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "POST", "/public/pkg.Svc/Call",
            fields: [("Host", "a"), ("content-type", contentType)] + timeouts.map { ("grpc-timeout", $0) })
        h.request.admission = Admission(identity: [], session: false, body: nil, claims: JSONObject())
        return h
    }

    @Test(arguments: [["-5S"], ["abc"], ["123456789S"], ["5"], ["1S", "2S"]])
    func whatGRPCDoesNotAllowIs400(timeouts: [String]) throws {
        let h = try Self.harness(timeouts)
        #expect(h.run(try #require(h.stage(GRPCDeadlineStage.self))).answerStatus == 400)
        #expect(h.request.context.state[GRPCDeadline.Key.self] == nil)
    }

    @Test func aDeadlineWithinTheTimeoutGoesAsAsked() throws {
        let h = try Self.harness(["250m"])
        #expect(h.run(try #require(h.stage(GRPCDeadlineStage.self))).proceeds)
        #expect(h.request.context.state[GRPCDeadline.Key.self]?.seconds == 0.25)
        let upstream = h.request.forwarding.request(
            h.request.admitted, ex: h.request.exchange, ctx: h.request.context, now: 0)
        #expect(upstream.fields.values("grpc-timeout") == ["250m"])
        #expect(upstream.forwarded?.passedOn.first("grpc-timeout") == nil)
    }

    @Test func aLongerOneIsCappedAndTheUpstreamHearsTheCap() throws {
        let h = try Self.harness(["2H"])
        #expect(h.run(try #require(h.stage(GRPCDeadlineStage.self))).proceeds)
        let cap = try #require(h.request.context.state[GRPCDeadline.Key.self])
        #expect(cap.seconds < 7200 && GRPCTimeout.seconds(cap.value) == cap.seconds)
        let upstream = h.request.forwarding.request(
            h.request.admitted, ex: h.request.exchange, ctx: h.request.context, now: 0)
        #expect(upstream.fields.values("grpc-timeout") == [cap.value])
        #expect(upstream.forwarded?.passedOn.first("grpc-timeout") == nil, "the client's copy stays behind")
    }

    @Test func anotherRequestsGRPCTimeoutIsNoneOfTheGatewaysBusiness() throws {
        let h = try Self.harness(["abc"], contentType: "application/json")
        #expect(h.run(try #require(h.stage(GRPCDeadlineStage.self))).proceeds)
        #expect(h.request.context.state[GRPCDeadline.Key.self] == nil)
    }
}
