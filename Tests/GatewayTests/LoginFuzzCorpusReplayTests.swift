import Foundation
import Gateway
import Testing

/// Replays the saved LoginFuzz corpus (fuzz/corpus-login, see fuzz/README.md) and every past finding
/// (fuzz/findings/login) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("LoginFuzz corpus replay")
struct LoginFuzzCorpusReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    static func files(_ directory: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzz.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
            .map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test("every corpus file and past finding runs through LoginFuzzEntry")
    func replay() throws {
        let corpus = try Self.files("corpus-login")
        try #require(corpus.count >= 50, "fuzz/corpus-login is missing or nearly empty (\(corpus.count) files)")
        let findings = try Self.files("findings/login")
        for file in corpus + findings { LoginFuzzEntry.all(file.bytes) }
        print("LoginFuzz corpus replay: \(corpus.count) files, \(findings.count) past findings")
    }
}
