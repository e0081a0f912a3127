import Foundation
import Gateway
import TestSupport
import Testing

/// Replays the saved MCPFuzz corpus (fuzz/corpus-mcp, see fuzz/README.md) and every past finding
/// (fuzz/findings/mcp) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("MCPFuzz corpus replay")
struct MCPFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through MCPFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay("corpus-mcp", findings: "findings/mcp", minimum: 30, through: MCPFuzzEntry.all)
        print("MCPFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
