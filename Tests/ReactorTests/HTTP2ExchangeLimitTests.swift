import Testing

@testable import Reactor

/// The exchanges the gateway has open on one HTTP/2 connection stay within
/// `HTTP2ConnectionHandler.maxExchanges` when the client resets streams the gateway is still
/// working on and opens new ones in the same read (nghttp2 forgets a reset stream at once,
/// the gateway's work on it goes on).
@Suite("HTTP/2: open exchanges stay within the maximum")
struct HTTP2ExchangeLimitTests {
    /// HEADERS without END_STREAM: GET https / from HPACK's static table, `:authority: a`
    /// as a literal without indexing.
    static func headers(_ id: UInt32) -> [UInt8] {
        let block: [UInt8] = [0x82, 0x87, 0x84, 0x01, 0x01, 0x61]
        return [0, 0, 6, 1, 4] + bytes(id) + block
    }

    static func reset(_ id: UInt32) -> [UInt8] {
        let cancel: [UInt8] = [0, 0, 0, 8]
        return [0, 0, 4, 3, 0] + bytes(id) + cancel
    }

    static func bytes(_ id: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: id >> $0) } }

    /// 100 streams the gateway holds, then (the second read) their resets and 100 new ones.
    static let streams: UInt32 = 100
    static let first: [UInt8] = {
        let settings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]
        var out = ProtocolSelector.preface + settings
        for i in 0..<streams { out += headers(1 + 2 * i) }
        return out
    }()
    static let second: [UInt8] = {
        var out: [UInt8] = []
        for i in 0..<streams { out += reset(1 + 2 * i) }
        for i in 0..<streams { out += headers(1 + 2 * (streams + i)) }
        return out
    }()

    /// Every stream held (`Answer.never`), whatever the client does.
    static let plan = HTTP2FuzzEntry.Plan(options: HTTPServerOptions(), answers: 3, sameAnswer: true, goAway: false)

    @Test func resetsAndNewStreamsInOneReadStayWithinTheMaximum() {
        let input = Self.first + Self.second
        let client = HTTP2FuzzEntry.ClientFrames(input)
        for splits in [[Self.first.count], [], Array(stride(from: Self.first.count, to: input.count, by: 13))] {
            let outcome = HTTP2FuzzEntry.run(input, splits: splits, Self.plan, client)
            #expect(outcome.heads.count <= HTTP2ConnectionHandler.maxExchanges, "splits \(splits.count)")
        }
    }

    /// The finding as the fuzzer's entry takes it: flag byte (preface prepended, every stream
    /// held), cut where the second read begins.
    @Test func theEntryHoldsItsInvariant() {
        HTTP2FuzzEntry.all([1 | 3 << 2 | 32] + Self.first.dropFirst(ProtocolSelector.preface.count) + Self.second)
    }
}
