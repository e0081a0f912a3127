import Foundation
import Gateway
import Testing

/// Replays the saved MCPFuzz corpus (fuzz/corpus-mcp, see fuzz/README.md) and every past finding
/// (fuzz/findings/mcp) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("MCPFuzz corpus replay")
struct MCPFuzzCorpusReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    static func files(_ directory: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzz.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
            .map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test("every corpus file and past finding runs through MCPFuzzEntry")
    func replay() throws {
        let corpus = try Self.files("corpus-mcp")
        try #require(corpus.count >= 30, "fuzz/corpus-mcp is missing or nearly empty (\(corpus.count) files)")
        let findings = try Self.files("findings/mcp")
        for file in corpus + findings { MCPFuzzEntry.all(file.bytes) }
        print("MCPFuzz corpus replay: \(corpus.count) files, \(findings.count) past findings")
    }
}
