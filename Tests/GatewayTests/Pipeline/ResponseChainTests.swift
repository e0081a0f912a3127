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

    static func chunk(_ s: String) -> BodyChunk { ByteQueue(Array(s.utf8)).chunk }

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

    /// A chain as an exchange holds it: its stages, its writer and its control alive together
    /// (the links between stages do not hold them).
    final class Chain {
        let stages: [ResponseStage]
        let writer = Recorder()
        let control: Control
        let first: ResponseStage

        init(_ stages: [ResponseStage], _ h: StageHarness) {
            self.stages = stages
            control = Control(h)
            first = ResponseStage.link(stages, to: writer, control: control)
        }
    }

    @Test func aChainWithoutStagesIsTheWriterAlone() throws {
        let chain = Chain([], try Self.harness())
        #expect(chain.first === chain.writer)
    }

    @Test func aNonceChallengeIsPassedOverAndTheRequestSentAgain() throws {
        let h = try Self.harness()
        let build = { UpstreamCall.Request(method: .GET, target: "/x", fields: HTTP1Fields(), body: nil) }
        let dpop = UpstreamDPoPExchange(nonces: UpstreamNonces(), authority: "a:80", retry: build)
        let chain = Chain([dpop], h)
        var request = build()
        dpop.willSend(&request, to: Self.pool(h))
        chain.first.head(
            Self.head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", "n-1")]),
            bodyLength: 2)
        chain.first.body(Self.chunk("no"))
        chain.first.trailers(HTTP1Fields())
        chain.first.end()
        #expect(chain.writer.events.isEmpty, "the client hears nothing of the challenge")
        #expect(chain.control.asked == ["again"] && chain.control.sentAgain?.target == "/x")
        // The second answer passes, challenge or not: there is one retry.
        chain.first.head(
            Self.head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", "n-2")]),
            bodyLength: 0)
        chain.first.end()
        #expect(chain.writer.events == ["head 401", "end"])
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
        let chain = Chain([try Self.signer()], h)
        chain.first.head(Self.head(200, [("Content-Type", "application/json")]), bodyLength: nil)
        chain.first.body(Self.chunk("{\"a\":"))
        chain.first.body(Self.chunk("1}"))
        chain.first.trailers(HTTP1Fields())
        #expect(chain.writer.events.isEmpty, "held until whole")
        chain.first.end()
        #expect(chain.writer.events == ["head 200", "body", "end"], "trailers are not signed, nor passed on")
        #expect(chain.writer.heads.first?.length == 7 && chain.writer.body == Array("{\"a\":1}".utf8))
        let added = h.request.context.response.added.map(\.0)
        #expect(added == ["Content-Digest", "Signature-Input", "Signature"])
        #expect(h.request.context.response.dropped == ["Content-Digest", "Signature-Input", "Signature"])
    }

    @Test func aStreamPassesUnsignedAndAnAnswerTooLargeToSignIsRefused() throws {
        let h = try Self.harness()
        let stream = Chain([try Self.signer()], h)
        stream.first.head(Self.head(200, [("Content-Type", "text/event-stream")]), bodyLength: nil)
        stream.first.body(Self.chunk("data: 1\n\n"))
        #expect(stream.writer.events == ["head 200", "body"])

        let held = Chain([try Self.signer()], h)
        held.first.head(Self.head(200, [("Content-Type", "application/json")]), bodyLength: nil)
        held.first.body(ByteQueue([UInt8](repeating: 0x20, count: ResponseSigner.maxBytes + 1)).chunk)
        #expect(held.control.asked == ["502 unsignable_answer"] && held.writer.events.isEmpty)
    }

    static func toolList() -> ToolListStage {
        ToolListStage(filter: ToolListFilter(id: .number("1"), maxBytes: 1 << 20, mayCall: { $0 != "deploy" }))
    }

    static let toolListAnswer = #"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read"},{"name":"deploy"}]}}"#

    @Test func aToolListIsHeldFilteredAndPassedOnWithItsNewLengthThenItsTrailers() throws {
        let h = try Self.harness()
        let stage = Self.toolList()
        let chain = Chain([stage], h)
        var request = UpstreamCall.Request(
            method: .POST, target: "/mcp", fields: HTTP1Fields([("Accept-Encoding", "gzip")]), body: nil)
        stage.willSend(&request, to: Self.pool(h))
        #expect(request.fields.values("Accept-Encoding") == ["gzip", "identity"])
        let answer = Self.toolListAnswer
        chain.first.head(
            Self.head(200, [("Content-Type", "application/json")]), bodyLength: UInt64(answer.utf8.count))
        chain.first.body(Self.chunk(answer))
        chain.first.trailers(HTTP1Fields())
        #expect(chain.writer.events.isEmpty)
        chain.first.end()
        #expect(chain.writer.events == ["head 200", "body", "trailers", "end"])
        let text = String(decoding: chain.writer.body, as: UTF8.self)
        #expect(text.contains("\"read\"") && !text.contains("deploy"))
        #expect(chain.writer.heads.first?.length == UInt64(chain.writer.body.count))
        #expect(h.request.context.response.added.contains { $0 == ("Cache-Control", "private, no-store") })
    }

    @Test func aSignedToolListIsFilteredBeforeItIsSigned() throws {
        let h = try Self.harness()
        var edits = ResponseEdits()
        // Installed in the order the request stages run (the signer's after MCP's, or not):
        // whatever the order, the filter is nearer the upstream.
        edits.install(try Self.signer())
        edits.install(Self.toolList())
        let chain = Chain(edits.takeStages(), h)
        chain.first.head(Self.head(200, [("Content-Type", "application/json")]), bodyLength: nil)
        chain.first.body(Self.chunk(Self.toolListAnswer))
        chain.first.end()
        let text = String(decoding: chain.writer.body, as: UTF8.self)
        #expect(text.contains("\"read\"") && !text.contains("deploy"), "what is signed is the filtered list")
        let digest = h.request.context.response.added.first { $0.0 == "Content-Digest" }?.1
        #expect(digest == ContentDigest.field(for: chain.writer.body))
    }

    @Test func aToolListThatCannotBeReadIsRefusedBeforeItsHeadOrCutAfter() throws {
        let h = try Self.harness()
        let coded = Chain([Self.toolList()], h)
        coded.first.head(
            Self.head(200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]), bodyLength: nil)
        #expect(coded.control.asked == ["502 tool_list_unfiltered"] && coded.writer.events.isEmpty)

        let streamed = Chain([Self.toolList()], h)
        streamed.first.head(Self.head(200, [("Content-Type", "text/event-stream")]), bodyLength: nil)
        streamed.first.body(Self.chunk("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":7}}\n\n"))
        #expect(streamed.writer.events == ["head 200"] && streamed.control.asked == ["cut tool_list_unfiltered"])
    }

    @Test func aListenStreamKeepsItsBoundOnSilencesAndPassesItsBytes() throws {
        let h = try Self.harness()
        var end = StreamEnd(timeout: 30, expiresAt: nil, now: h.request.services.wallClock.now)
        end.closingEvent = Array("data: closed\n\n".utf8)
        let stage = StreamEndStage(end)
        let chain = Chain([stage], h)
        var request = UpstreamCall.Request(method: .POST, target: "/mcp", fields: HTTP1Fields(), body: nil)
        stage.willSend(&request, to: Self.pool(h))
        #expect((request.idleTimeout ?? 0) > 30 && (request.idleTimeout ?? 0) <= 40.5)
        chain.first.head(Self.head(200, [("Content-Type", "text/event-stream")]), bodyLength: nil)
        #expect(stage.betweenEvents, "nothing sent yet")
        chain.first.body(Self.chunk("data: 1\n"))
        #expect(!stage.betweenEvents)
        chain.first.body(Self.chunk("\n"))
        #expect(stage.betweenEvents && chain.writer.body == Array("data: 1\n\n".utf8))
        stage.finished()
    }
}
