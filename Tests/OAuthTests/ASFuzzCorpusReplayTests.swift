import Foundation
import OAuth
import TestSupport
import Testing

/// Replays the saved ASFuzz corpus (fuzz/corpus-as, see fuzz/README.md) and every past finding
/// (fuzz/findings/as) through the same entry the fuzzer drives, so CI re-checks every input the
/// fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("ASFuzz corpus replay")
struct ASFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through ASFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay("corpus-as", findings: "findings/as", minimum: 15, through: ASFuzzEntry.all)
        print("ASFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
