import Foundation
import JOSE
import TestSupport
import Testing

/// Replays the saved libFuzzer corpus (fuzz/corpus, see fuzz/README.md) and every past finding
/// (fuzz/findings/jose) through the same entry points the fuzzer drives, so CI re-checks every
/// input the fuzzer found interesting without building the fuzzer. An input that traps here is
/// a regression.
@Suite("Fuzz corpus replay")
struct FuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through JOSEFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay("corpus", findings: "findings/jose", minimum: 100, through: JOSEFuzzEntry.all)
        print("fuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
