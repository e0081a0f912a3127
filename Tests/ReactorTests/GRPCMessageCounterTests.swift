import Foundation
import Testing

@testable import Reactor

/// A gRPC body's Length-Prefixed-Message framing read run by run (`GRPCMessageCounter`):
/// prefixes split anywhere, a message exactly at the limit and one byte past it, compressed
/// messages by their wire length, gRPC-Web's base64 form; no sockets (the engines feeding it
/// are in HTTP1ServerGRPCBodyTests, the wire in IntegrationTests/h2/test_grpc_message_size.py).
@Suite("gRPC message counter")
struct GRPCMessageCounterTests {
    static func frame(_ length: Int, flag: UInt8 = 0) -> [UInt8] {
        let n = UInt32(length)
        return [flag, UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            + [UInt8](repeating: 0x61, count: length)
    }

    /// Feeds `bytes` in runs cut at `cuts`; the first refusal, or `.within`.
    static func feed(_ counter: inout GRPCMessageCounter, _ bytes: [UInt8], cuts: [Int] = [])
        -> GRPCMessageCounter
        .Verdict
    {
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            let run = Array(bytes[start..<end])
            if counter.feed(run.span) == .tooLarge { return .tooLarge }
            start = end
        }
        return .within
    }

    @Test func aMessageAtTheLimitPassesAndOnePastIsRefused() {
        var at = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 100))
        #expect(Self.feed(&at, Self.frame(100)) == .within)
        #expect(at.messages == 1)
        var past = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 100))
        #expect(Self.feed(&past, Self.frame(101)) == .tooLarge)
        // The limit is the message's, not the frame's: 100 bytes are 105 on the wire.
        var zero = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 0))
        #expect(Self.feed(&zero, Self.frame(0) + Self.frame(0)) == .within)
        #expect(zero.messages == 2)
    }

    /// Refused on the prefix alone: none of the message's bytes need to have come.
    @Test func refusedAsSoonAsThePrefixIsWhole() {
        var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 10))
        #expect(c.feed([0, 0, 0, 0].span) == .within)
        #expect(c.feed([11].span) == .tooLarge)
        // Final: what follows is refused too, whatever it holds.
        #expect(c.feed([0, 0, 0, 0, 1, 0].span) == .tooLarge)
    }

    /// Every cut of two messages and a third past the limit, at every byte: the verdicts never
    /// depend on where DATA frames or chunks split the body.
    @Test func prefixesSplitAtAnyByte() {
        let body = Self.frame(7) + Self.frame(0) + Self.frame(20) + Self.frame(21)
        for cut in 1..<body.count {
            for second in [cut, min(cut + 3, body.count)] {
                var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 20))
                #expect(Self.feed(&c, body, cuts: [cut, second]) == .tooLarge, "cut at \(cut), \(second)")
                #expect(c.messages == 4)
            }
        }
        // One byte at a time.
        var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 20))
        #expect(Self.feed(&c, Self.frame(20) + Self.frame(3), cuts: Array(1..<28)) == .within)
        #expect(c.messages == 2)
    }

    /// A length's high bytes count: 0x01000000 is 16 MiB, not 1.
    @Test func theLengthIsBigEndianOverFourBytes() {
        var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 4 << 20))
        #expect(c.feed([0, 0x01, 0, 0, 0].span) == .tooLarge)
        var d = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 4 << 20))
        #expect(d.feed([0, 0, 0x40, 0, 0].span) == .within)  // 4 MiB exactly
        var e = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 4 << 20))
        #expect(e.feed([0, 0, 0x40, 0, 1].span) == .tooLarge)
        var most = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 1 << 30))
        #expect(most.feed([0, 0xFF, 0xFF, 0xFF, 0xFF].span) == .tooLarge)
    }

    /// A compressed message (flag 1) counts by its length on the wire: what it would inflate
    /// to is the upstream's to bound. The flag itself is not judged here.
    @Test func aCompressedMessageCountsByItsWireLength() {
        var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 50))
        #expect(Self.feed(&c, Self.frame(50, flag: 1) + Self.frame(10, flag: 7)) == .within)
        #expect(Self.feed(&c, Self.frame(51, flag: 1)) == .tooLarge)
    }

    @Test func wireBytesOfAMessageAtTheLimit() {
        #expect(GRPCMessageLimit(maxMessage: 4 << 20).wireBytes == (4 << 20) + 5)
        #expect(GRPCMessageLimit(maxMessage: 1, text: true).wireBytes == 8)
        #expect(GRPCMessageLimit(maxMessage: 4, text: true).wireBytes == 12)
    }

    // MARK: gRPC-Web text

    static func base64(_ bytes: [UInt8]) -> [UInt8] { Array(Data(bytes).base64EncodedString().utf8) }

    @Test(arguments: [0, 1, 2, 3, 98, 99, 100])
    func textIsCountedAfterBase64(length: Int) {
        var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 99, text: true))
        let verdict = Self.feed(&c, Self.base64(Self.frame(length)))
        #expect(verdict == (length > 99 ? .tooLarge : .within))
        #expect(c.messages == 1)
    }

    /// Frames each encoded on their own, padding between them, cut at any byte; a line break
    /// carries nothing.
    @Test func textFramesEncodedApartAndSplitAnywhere() {
        let body =
            Self.base64(Self.frame(1)) + Self.base64(Self.frame(2)) + Array("\r\n".utf8)
            + Self.base64(Self.frame(60) + Self.frame(61))
        for cut in 1..<body.count {
            var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 60, text: true))
            #expect(Self.feed(&c, body, cuts: [cut]) == .tooLarge, "cut at \(cut)")
            #expect(c.messages == 4)
        }
        var c = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 61, text: true))
        #expect(Self.feed(&c, body) == .within)
    }

    /// The URL-safe alphabet decodes alike (`-` and `_`).
    @Test func textURLSafeAlphabet() {
        let standard = Self.base64(Self.frame(0xFBEF))
        let urlSafe = standard.map {
            $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0
        }
        var a = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 0xFBEE, text: true))
        var b = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 0xFBEE, text: true))
        #expect(Self.feed(&a, standard) == .tooLarge)
        #expect(Self.feed(&b, urlSafe) == .tooLarge)
    }
}
