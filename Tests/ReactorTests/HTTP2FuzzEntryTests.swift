import Testing

@testable import Reactor

/// The H2Fuzz harness itself: a request it feeds reaches its gateway with the head a client
/// sent, fed whole or one byte at a time, and the answer comes back as frames.
@Suite("H2Fuzz: the harness serves a request")
struct HTTP2FuzzEntryTests {
    /// The preface, an empty SETTINGS, and HEADERS (END_STREAM, END_HEADERS) on stream 1:
    /// GET, https, / from HPACK's static table, `:authority: a` as a literal.
    static let get: [UInt8] =
        ProtocolSelector.preface + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        + [0, 0, 6, 1, 5, 0, 0, 0, 1, 0x82, 0x87, 0x84, 0x41, 0x01, 0x61]

    static let plan = HTTP2FuzzEntry.Plan(options: HTTPServerOptions(), answers: 0, goAway: false)

    @Test func aGetReachesTheGatewayAndIsAnswered() {
        let client = HTTP2FuzzEntry.ClientFrames(Self.get)
        #expect(client.opened == [1])
        for splits in [[], Array(1..<Self.get.count)] {
            let outcome = HTTP2FuzzEntry.run(Self.get, splits: splits, Self.plan, client)
            #expect(outcome.heads == [1: HTTP2FuzzEntry.Head(method: "GET", target: "/", fields: ["host: a"])])
            #expect(outcome.serverReset.isEmpty && !outcome.connectionError)
        }
    }

    @Test func theEntryTakesItWithItsFlagByte() {
        HTTP2FuzzEntry.all([0] + Self.get)
        HTTP2FuzzEntry.all([1] + Self.get.dropFirst(ProtocolSelector.preface.count))
    }
}
