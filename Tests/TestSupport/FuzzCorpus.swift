import Foundation

/// The saved libFuzzer corpora and past findings under `fuzz/` (fuzz/README.md), read by the
/// replay suites of every test target: each runs its target's files through the same entry the
/// fuzzer drives, so CI re-checks every input the fuzzer kept without building the fuzzer. An
/// input that traps there is a regression.
public enum FuzzCorpus {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    /// The files of `fuzz/<directory>` by name (none if it does not exist; dotfiles left out).
    public static func files(_ directory: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = root.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
            .map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    /// Runs every file of `corpus` (at least `minimum` of them: a missing or emptied corpus is
    /// a failure, not a pass) and of `findings` through `entry`; returns the two counts.
    public static func replay(
        _ corpus: String, findings: String, minimum: Int, through entry: ([UInt8]) -> Void
    ) throws -> (corpus: Int, findings: Int) {
        let inputs = try files(corpus)
        guard inputs.count >= minimum else { throw Missing(directory: corpus, count: inputs.count) }
        let past = try files(findings)
        for file in inputs + past { entry(file.bytes) }
        return (inputs.count, past.count)
    }

    public struct Missing: Error, CustomStringConvertible {
        public let directory: String
        public let count: Int
        public var description: String { "fuzz/\(directory) is missing or nearly empty (\(count) files)" }
    }
}
