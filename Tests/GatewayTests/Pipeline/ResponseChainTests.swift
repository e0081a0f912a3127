import JOSE
import MessageSignatures
import Testing

@testable import Gateway
@testable import Reactor

/// The response side as a chain: where installed stages go, and what each passes, holds or
/// replaces on the way to the writer. A recording stage stands in for the client writer, and
/// a recording control for the exchange; the services and context are a test worker's.
@Suite("Response chain: stages in order, each passing, holding or replacing")
struct ResponseChainTests {
    /// What reached the end of the chain, in order.
    final class Recorder: ResponseStage {
        var events: [String] = []
        var heads: [(status: Int, length: UInt64?)] = []
        var body: [UInt8] = []

        init() { super.init(position: .writer) }

        override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
            heads.append((head.status, bodyLength))
            events.append("head \(head.status)")
        }
        override func body(_ chunk: BodyChunk) {
            body += chunk.take()
            events.append("body")
        }
        override func trailers(_ fields: HTTP1Fields) { events.append("trailers") }
        override func end(detail: String? = nil) { events.append("end" + (detail.map { " \($0)" } ?? "")) }
    }

    /// What the stages asked of the exchange.
    final class Control: ResponseControl {
        let services: WorkerServices
        let context: RequestContext
        var isDone = false
        var headSent = false
        var asked: [String] = []
        var sentAgain: UpstreamCall.Request?

        init(_ h: StageHarness) {
            services = h.request.services
            context = h.request.context
        }

        func holdUpstream() { asked.append("hold") }
        func releaseUpstream() { asked.append("release") }
        func sendAgain(_ request: consuming UpstreamCall.Request, on pool: UpstreamPool) {
            asked.append("again")
            sentAgain = request
        }
        func leaveUpstream() { asked.append("leave") }
        func answerInstead(_ response: GatewayResponse, upstreamError: String?) {
            asked.append("\(response.status) \(upstreamError ?? "-")")
            isDone = true
        }
        func cutAnswer(upstreamError: String, warning: String, detail: String) {
            asked.append("cut \(upstreamError)")
            isDone = true
        }
    }

    static func harness() throws -> StageHarness {
        try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/x")
    }

    static func head(_ status: Int, _ fields: [(String, String)]) -> HTTPResponseHead {
        HTTPResponseHead(status: status, fields: HTTP1Fields(fields))
    }

    static func chunk(_ s: String) -> BodyChunk { OwnedBuffer(Array(s.utf8)).chunk }

    static func pool(_ h: StageHarness) -> UpstreamPool {
        UpstreamPool(
            loop: h.request.services.loop,
            endpoint: UpstreamEndpoint(host: "127.0.0.1", port: 9, connectTimeout: 1, responseTimeout: 1, maxIdle: 1))
    }

    @Test func installedStagesRunNearestTheUpstreamFirstWhateverTheOrderTheyCameIn() throws {
        let filter = ToolListFilter(id: .number("1"), maxBytes: 1 << 20, mayCall: { _ in true })
        var edits = ResponseEdits()
        edits.install(StreamEndStage(StreamEnd(timeout: 5, expiresAt: nil, now: 0)))
        edits.install(ToolListStage(filter: filter))
        edits.install(UpstreamDPoPExchange(nonces: UpstreamNonces(), authority: "a:80", retry: nil))
        edits.install(ToolListStage(filter: filter))
        let stages = edits.takeStages()
        #expect(stages.map(\.position) == [.upstreamRetry, .content, .content, .streamEnd])
        #expect(edits.takeStages().isEmpty, "the exchange takes them; the request keeps none")
    }

    @Test func aChainWithoutStagesIsTheWriterAlone() throws {
        let h = try Self.harness()
        let writer = Recorder()
        #expect(ResponseStage.link([], to: writer, control: Control(h)) === writer)
    }

    @Test func aNonceChallengeIsPassedOverAndTheRequestSentAgain() throws {
        let h = try Self.harness()
        let control = Control(h)
        let writer = Recorder()
        let build = { UpstreamCall.Request(method: .GET, target: "/x", fields: HTTP1Fields(), body: nil) }
        let dpop = UpstreamDPoPExchange(nonces: UpstreamNonces(), authority: "a:80", retry: build)
        let first = ResponseStage.link([dpop], to: writer, control: control)
        var request = build()
        dpop.willSend(&request, to: Self.pool(h))
        first.head(
            Self.head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", "n-1")]),
            bodyLength: 2)
        first.body(Self.chunk("no"))
        first.trailers(HTTP1Fields())
        first.end()
        #expect(writer.events.isEmpty, "the client hears nothing of the challenge")
        #expect(control.asked == ["again"] && control.sentAgain?.target == "/x")
        // The second answer passes, challenge or not: there is one retry.
        first.head(
            Self.head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", "n-2")]),
            bodyLength: 0)
        first.end()
        #expect(writer.events == ["head 401", "end"])
    }

    static func signer() throws -> ResponseSigner {
        let key = try JWK.generate(for: .ES256, kid: "gw-r1")
        let signing = MessageSigningConfig(
            key: key, keyid: "gw-r1", algorithm: SignatureAlgorithm.of(key)!,
            components: MessageSigningConfig.defaultResponseComponents, tag: "fapi-2-response")
        let request = SignedMessage(method: "GET", scheme: "https", authority: "a", target: "/x", fields: [])
        return ResponseSigner(signing: signing, request: request, requestLabel: nil)
    }

    @Test func aSignedAnswerIsHeldWholeThenSentWithItsLengthAndSignature() throws {
        let h = try Self.harness()
        let writer = Recorder()
        let first = ResponseStage.link([try Self.signer()], to: writer, control: Control(h))
        first.head(Self.head(200, [("Content-Type", "application/json")]), bodyLength: nil)
        first.body(Self.chunk("{\"a\":"))
        first.body(Self.chunk("1}"))
        first.trailers(HTTP1Fields())
        #expect(writer.events.isEmpty, "held until whole")
        first.end()
        #expect(writer.events == ["head 200", "body", "end"], "trailers are not signed, nor passed on")
        #expect(writer.heads.first?.length == 7 && writer.body == Array("{\"a\":1}".utf8))
        let added = h.request.context.response.added.map(\.0)
        #expect(added == ["Content-Digest", "Signature-Input", "Signature"])
        #expect(h.request.context.response.dropped == ["Content-Digest", "Signature-Input", "Signature"])
    }

    @Test func aStreamPassesUnsignedAndAnAnswerTooLargeToSignIsRefused() throws {
        let h = try Self.harness()
        let writer = Recorder()
        let first = ResponseStage.link([try Self.signer()], to: writer, control: Control(h))
        first.head(Self.head(200, [("Content-Type", "text/event-stream")]), bodyLength: nil)
        first.body(Self.chunk("data: 1\n\n"))
        #expect(writer.events == ["head 200", "body"])

        let control = Control(h)
        let held = ResponseStage.link([try Self.signer()], to: Recorder(), control: control)
        held.head(Self.head(200, [("Content-Type", "application/json")]), bodyLength: nil)
        held.body(OwnedBuffer([UInt8](repeating: 0x20, count: ResponseSigner.maxBytes + 1)).chunk)
        #expect(control.asked == ["502 unsignable_answer"])
    }

    @Test func aToolListIsHeldFilteredAndPassedOnWithItsNewLengthThenItsTrailers() throws {
        let h = try Self.harness()
        let writer = Recorder()
        let stage = ToolListStage(
            filter: ToolListFilter(id: .number("1"), maxBytes: 1 << 20, mayCall: { $0 != "deploy" }))
        let first = ResponseStage.link([stage], to: writer, control: Control(h))
        var request = UpstreamCall.Request(
            method: .POST, target: "/mcp", fields: HTTP1Fields([("Accept-Encoding", "gzip")]), body: nil)
        stage.willSend(&request, to: Self.pool(h))
        #expect(request.fields.values("Accept-Encoding") == ["gzip", "identity"])
        let answer = #"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read"},{"name":"deploy"}]}}"#
        first.head(Self.head(200, [("Content-Type", "application/json")]), bodyLength: UInt64(answer.utf8.count))
        first.body(Self.chunk(answer))
        first.trailers(HTTP1Fields())
        #expect(writer.events.isEmpty)
        first.end()
        #expect(writer.events == ["head 200", "body", "trailers", "end"])
        let text = String(decoding: writer.body, as: UTF8.self)
        #expect(text.contains("\"read\"") && !text.contains("deploy"))
        #expect(writer.heads.first?.length == UInt64(writer.body.count))
        #expect(h.request.context.response.added.contains { $0 == ("Cache-Control", "private, no-store") })
    }

    @Test func aToolListThatCannotBeReadIsRefusedBeforeItsHeadOrCutAfter() throws {
        let h = try Self.harness()
        let filter = ToolListFilter(id: .number("1"), maxBytes: 1 << 20, mayCall: { _ in true })
        let control = Control(h)
        let coded = ResponseStage.link([ToolListStage(filter: filter)], to: Recorder(), control: control)
        coded.head(
            Self.head(200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]), bodyLength: nil)
        #expect(control.asked == ["502 tool_list_unfiltered"])

        let streamed = Control(h)
        let writer = Recorder()
        let first = ResponseStage.link([ToolListStage(filter: filter)], to: writer, control: streamed)
        first.head(Self.head(200, [("Content-Type", "text/event-stream")]), bodyLength: nil)
        first.body(Self.chunk("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":7}}\n\n"))
        #expect(writer.events == ["head 200"] && streamed.asked == ["cut tool_list_unfiltered"])
    }

    @Test func aListenStreamKeepsItsBoundOnSilencesAndPassesItsBytes() throws {
        let h = try Self.harness()
        let writer = Recorder()
        var end = StreamEnd(timeout: 30, expiresAt: nil, now: h.request.services.wallClock.now)
        end.closingEvent = Array("data: closed\n\n".utf8)
        let stage = StreamEndStage(end)
        let first = ResponseStage.link([stage], to: writer, control: Control(h))
        var request = UpstreamCall.Request(method: .POST, target: "/mcp", fields: HTTP1Fields(), body: nil)
        stage.willSend(&request, to: Self.pool(h))
        #expect((request.idleTimeout ?? 0) > 30 && (request.idleTimeout ?? 0) <= 40.5)
        first.head(Self.head(200, [("Content-Type", "text/event-stream")]), bodyLength: nil)
        #expect(stage.betweenEvents, "nothing sent yet")
        first.body(Self.chunk("data: 1\n"))
        #expect(!stage.betweenEvents)
        first.body(Self.chunk("\n"))
        #expect(stage.betweenEvents && writer.body == Array("data: 1\n\n".utf8))
        stage.finished()
    }
}
