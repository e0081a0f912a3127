import Foundation
import OAuth
import TestSupport
import Testing

/// Replays the saved SETFuzz corpus (fuzz/corpus-set, see fuzz/README.md) and every past finding
/// (fuzz/findings/set) through the same entry the fuzzer drives, so CI re-checks every input the
/// fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("SETFuzz corpus replay")
struct SETFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through SETFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay("corpus-set", findings: "findings/set", minimum: 15, through: SETFuzzEntry.all)
        print("SETFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
