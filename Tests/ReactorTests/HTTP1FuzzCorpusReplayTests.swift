import Foundation
import Reactor
import Testing

/// Replays the saved HTTP1Fuzz corpus (fuzz/corpus-http1, see fuzz/README.md) through the
/// same entry the fuzzer drives, so CI re-checks every input the fuzzer kept without
/// building the fuzzer. An input that traps here is a regression.
@Suite("HTTP/1.1 fuzz corpus replay")
struct HTTP1FuzzCorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz/corpus-http1")

    @Test("every corpus file runs through HTTP1FuzzEntry")
    func replay() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { !$0.hasPrefix(".") }
            .sorted()
        try #require(names.count >= 40, "fuzz/corpus-http1 is missing or nearly empty (\(names.count) files)")
        var bytes = 0
        for name in names {
            let data = try Data(contentsOf: Self.corpus.appendingPathComponent(name))
            bytes += data.count
            HTTP1FuzzEntry.all(Array(data))
        }
        print("HTTP/1.1 fuzz corpus replay: \(names.count) files, \(bytes) bytes")
    }

    /// Beyond the entry's own feedings (byte by byte up to 48 bytes, two cuts): every corpus
    /// file, of any length, byte by byte and cut in two at every position, gets the outcome it
    /// gets whole.
    @Test("every corpus file gives the same outcome however it is cut")
    func splitAnywhere() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { !$0.hasPrefix(".") }
        for name in names {
            let data = Array(try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
            guard let first = data.first else { continue }
            let stream = Array(data.dropFirst())
            // As the entry reads an input: the first byte picks the parser.
            if first & 1 == 0 {
                let whole = parseRequests(stream)
                for cuts in everyFeeding(stream.count) {
                    #expect(parseRequests(stream, cuts: cuts) == whole, "\(name) cut at \(cuts)")
                }
            } else {
                let toHEAD = [Bool](repeating: first & 2 != 0, count: stream.count + 1)
                let whole = parseResponses(stream, toHEAD: toHEAD)
                for cuts in everyFeeding(stream.count) {
                    #expect(parseResponses(stream, toHEAD: toHEAD, cuts: cuts) == whole, "\(name) cut at \(cuts)")
                }
            }
        }
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
