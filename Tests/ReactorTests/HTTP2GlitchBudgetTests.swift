import Testing

@testable import Reactor

/// Frames that serve no request end the connection once past the glitch budget (a burst of
/// 1000): GOAWAY ENHANCE_YOUR_CALM. Sent from the attacker's side, as raw frames.
@Suite("HTTP/2: the glitch budget")
struct HTTP2GlitchBudgetTests {
    static let enhanceYourCalm: UInt32 = 11
    static let settings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]

    static func id(_ id: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: id >> $0) } }

    /// HEADERS for GET (or POST) https / with `:authority: a`; END_STREAM for GET.
    static func headers(_ stream: UInt32, post: Bool = false) -> [UInt8] {
        let block: [UInt8] = [post ? 0x83 : 0x82, 0x87, 0x84, 0x01, 0x01, 0x61]
        return [0, 0, 6, 1, post ? 4 : 5] + id(stream) + block
    }

    static func windowUpdate(_ stream: UInt32, _ increment: UInt32) -> [UInt8] {
        [0, 0, 4, 8, 0] + id(stream) + id(increment)
    }

    static func emptyData(_ stream: UInt32) -> [UInt8] { [0, 0, 0, 0, 0] + id(stream) }

    /// The error code of the server's GOAWAY, if it sent one.
    static func goAwayCode(_ input: [UInt8]) -> UInt32? { serve(input).goAway }

    /// Feeds `input`; the server's GOAWAY code, and how many exchanges reached the gateway.
    static func serve(_ input: [UInt8]) -> (goAway: UInt32?, exchanges: Int) {
        var exchanges = 0
        let context = ServerContext(options: HTTPServerOptions()) { exchange in
            exchanges += 1
            exchange.respond(status: 200, body: [])
        }
        let connection = HTTP2FuzzConnection(context: context)!
        for chunk in stride(from: 0, to: input.count, by: 16 << 10) {
            connection.feed(input[chunk..<min(chunk + (16 << 10), input.count)])
        }
        let out = connection.written
        connection.close()
        var i = 0
        var code: UInt32?
        while i + 9 <= out.count {
            let length = Int(out[i]) << 16 | Int(out[i + 1]) << 8 | Int(out[i + 2])
            if out[i + 3] == 7, i + 17 <= out.count {
                code = out[(i + 13)..<(i + 17)].reduce(0) { $0 << 8 | UInt32($1) }
            }
            i += 9 + length
        }
        return (code, exchanges)
    }

    /// A stream made a stream error in the read that opened it is never handed to the
    /// gateway: no work starts for a stream about to be reset.
    @Test func aStreamErroredInItsFirstReadNeverReachesTheGateway() {
        var input = ProtocolSelector.preface + Self.settings
        for i in 0..<UInt32(10) { input += Self.headers(1 + 2 * i) + Self.windowUpdate(1 + 2 * i, 0x7FFF_FFFF) }
        input += Self.headers(21)
        let served = Self.serve(input)
        #expect(served.exchanges == 1)
        #expect(served.goAway == nil)
    }

    @Test func emptyDataFramesPastTheBudgetEndTheConnection() {
        var input = ProtocolSelector.preface + Self.settings + Self.headers(1, post: true)
        for _ in 0..<1100 { input += Self.emptyData(1) }
        #expect(Self.goAwayCode(input) == Self.enhanceYourCalm)
    }

    /// MadeYouReset (CVE-2025-8671): each stream gets a window increment past 2^31 - 1, a
    /// stream error (RFC 9113 §6.9.1) the gateway answers with RST_STREAM FLOW_CONTROL_ERROR
    /// after it started on the request.
    @Test func resetsTheClientProvokesPastTheBudgetEndTheConnection() {
        var input = ProtocolSelector.preface + Self.settings
        for i in 0..<UInt32(1100) { input += Self.headers(1 + 2 * i) + Self.windowUpdate(1 + 2 * i, 0x7FFF_FFFF) }
        #expect(Self.goAwayCode(input) == Self.enhanceYourCalm)
    }

    @Test func windowUpdatesPastEnvoysBoundEndTheConnection() {
        var input = ProtocolSelector.preface + Self.settings
        for _ in 0..<1100 { input += Self.windowUpdate(0, 1) }
        #expect(Self.goAwayCode(input) == Self.enhanceYourCalm)
    }

    /// Under the budget nothing happens: 900 of each kind, and the connection serves on.
    @Test func underTheBudgetTheConnectionServesOn() {
        var input = ProtocolSelector.preface + Self.settings + Self.headers(1, post: true)
        for _ in 0..<900 { input += Self.emptyData(1) }
        #expect(Self.goAwayCode(input) == nil)
    }

    @Test func theBudgetRefillsAtItsRate() {
        var budget = HTTP2GlitchBudget()
        var spent = 0
        while budget.spend(now: 1) { spent += 1 }
        #expect(spent == 1000)
        // A second later, 33 more, less the one spent past the budget.
        spent = 0
        while budget.spend(now: 2) { spent += 1 }
        #expect(spent == 32)
    }
}
