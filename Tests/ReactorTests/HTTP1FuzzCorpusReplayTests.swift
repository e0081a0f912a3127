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
