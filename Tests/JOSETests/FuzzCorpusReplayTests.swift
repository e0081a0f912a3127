import Foundation
import JOSE
import Testing

/// Replays the saved libFuzzer corpus (fuzz/corpus, see fuzz/README.md) and every past finding
/// (fuzz/findings/jose) through the same entry points the fuzzer drives, so CI re-checks every
/// input the fuzzer found interesting without building the fuzzer. An input that traps here is
/// a regression.
@Suite("Fuzz corpus replay")
struct FuzzCorpusReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    static func files(_ directory: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzz.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
            .map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test("every corpus file and past finding runs through JOSEFuzzEntry")
    func replay() throws {
        let corpus = try Self.files("corpus")
        try #require(corpus.count >= 100, "fuzz/corpus is missing or nearly empty (\(corpus.count) files)")
        let findings = try Self.files("findings/jose")
        for file in corpus + findings { JOSEFuzzEntry.all(file.bytes) }
        print("fuzz corpus replay: \(corpus.count) files, \(findings.count) past findings")
    }
}
