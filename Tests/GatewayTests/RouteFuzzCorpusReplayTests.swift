import Foundation
import Gateway
import Testing

/// Replays the saved RouteFuzz corpus (fuzz/corpus-route, see fuzz/README.md) and every past finding
/// (fuzz/findings/route) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("RouteFuzz corpus replay")
struct RouteFuzzCorpusReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    static func files(_ directory: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzz.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
            .map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test("every corpus file and past finding runs through RouteFuzzEntry")
    func replay() throws {
        let corpus = try Self.files("corpus-route")
        try #require(corpus.count >= 50, "fuzz/corpus-route is missing or nearly empty (\(corpus.count) files)")
        let findings = try Self.files("findings/route")
        for file in corpus + findings { RouteFuzzEntry.all(file.bytes) }
        print("RouteFuzz corpus replay: \(corpus.count) files, \(findings.count) past findings")
    }
}
