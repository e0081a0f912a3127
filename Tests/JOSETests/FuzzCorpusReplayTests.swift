import Foundation
import JOSE
import Testing

/// Replays the saved libFuzzer corpus (fuzz/corpus, see fuzz/README.md) through the same
/// entry points the fuzzer drives, so CI re-checks every input the fuzzer found interesting
/// without building the fuzzer. An input that traps here is a regression.
@Suite("Fuzz corpus replay")
struct FuzzCorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz/corpus")

    @Test("every corpus file runs through JOSEFuzzEntry")
    func replay() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { !$0.hasPrefix(".") }
            .sorted()
        try #require(names.count >= 100, "fuzz/corpus is missing or nearly empty (\(names.count) files)")
        var bytes = 0
        for name in names {
            let data = try Data(contentsOf: Self.corpus.appendingPathComponent(name))
            bytes += data.count
            JOSEFuzzEntry.all(Array(data))
        }
        print("fuzz corpus replay: \(names.count) files, \(bytes) bytes")
    }
}
