import Foundation
import Reactor
import TestSupport
import Testing

/// Replays the saved HTTP1Fuzz corpus (fuzz/corpus-http1, see fuzz/README.md) and every past
/// finding (fuzz/findings/http1) through the same entry the fuzzer drives, so CI re-checks
/// every input the fuzzer kept without building the fuzzer. An input that traps here is a
/// regression.
@Suite("HTTP/1.1 fuzz corpus replay")
struct HTTP1FuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through HTTP1FuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-http1", findings: "findings/http1", minimum: 40, through: HTTP1FuzzEntry.all)
        print("HTTP/1.1 fuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }

    /// Beyond the entry's own feedings (byte by byte up to 48 bytes, two cuts): every corpus
    /// file and past finding, of any length, byte by byte and cut in two, gets the outcome it
    /// gets whole. Inputs up to 64 bytes are cut at every position; longer ones around every
    /// CR and LF (where a verdict that depends on the split has hidden: a lone CR kept as the
    /// start of an empty line) and at every 8th position, so the test stays linear-ish in the
    /// corpus rather than quadratic.
    @Test("every corpus file gives the same outcome however it is cut")
    func splitAnywhere() throws {
        for (name, data) in try FuzzCorpus.files("corpus-http1") + FuzzCorpus.files("findings/http1") {
            guard let first = data.first else { continue }
            let stream = Array(data.dropFirst())
            // As the entry reads an input: the first byte picks the parser.
            if first & 1 == 0 {
                let whole = parseRequests(stream)
                for cuts in Self.feedings(stream) {
                    #expect(parseRequests(stream, cuts: cuts) == whole, "\(name) cut at \(cuts)")
                }
            } else {
                let toHEAD = [Bool](repeating: first & 2 != 0, count: stream.count + 1)
                let whole = parseResponses(stream, toHEAD: toHEAD)
                for cuts in Self.feedings(stream) {
                    #expect(parseResponses(stream, toHEAD: toHEAD, cuts: cuts) == whole, "\(name) cut at \(cuts)")
                }
            }
        }
    }

    /// Byte by byte, then each single cut: every position up to 64 bytes; beyond, the
    /// positions next to a CR or LF and every 8th.
    static func feedings(_ bytes: [UInt8]) -> [[Int]] {
        guard bytes.count > 64 else { return everyFeeding(bytes.count) }
        let lineEnds: Set<UInt8> = [13, 10]
        let cuts = (1..<bytes.count).filter { i in
            i % 8 == 0 || lineEnds.contains(bytes[i - 1]) || lineEnds.contains(bytes[i])
        }
        return [Array(1..<bytes.count)] + cuts.map { [$0] }
    }

    /// The entry's own invariants hold on the unit tests' catalogue too.
    @Test func catalogueRunsThroughTheEntry() {
        for c in HTTP1RequestCases.refusals + HTTP1RequestCases.acceptances {
            HTTP1FuzzEntry.request(c.wire)
        }
        for c in HTTP1ResponseParserTests.refusals + HTTP1ResponseParserTests.acceptances {
            HTTP1FuzzEntry.response(c.wire, toHEAD: false)
            HTTP1FuzzEntry.response(c.wire, toHEAD: true)
        }
    }
}
