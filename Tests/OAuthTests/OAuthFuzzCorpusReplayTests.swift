import Foundation
import OAuth
import Testing

/// Replays the saved OAuthFuzz corpus (fuzz/corpus-oauth, see fuzz/README.md) and every past finding
/// (fuzz/findings/oauth) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("OAuthFuzz corpus replay")
struct OAuthFuzzCorpusReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    static func files(_ directory: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzz.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
            .map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test("every corpus file and past finding runs through OAuthFuzzEntry")
    func replay() throws {
        let corpus = try Self.files("corpus-oauth")
        try #require(corpus.count >= 50, "fuzz/corpus-oauth is missing or nearly empty (\(corpus.count) files)")
        let findings = try Self.files("findings/oauth")
        for file in corpus + findings { OAuthFuzzEntry.all(file.bytes) }
        print("OAuthFuzz corpus replay: \(corpus.count) files, \(findings.count) past findings")
    }
}
