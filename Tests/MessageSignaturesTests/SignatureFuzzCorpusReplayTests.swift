import MessageSignatures
import TestSupport
import Testing

/// Replays the saved SignatureFuzz corpus (fuzz/corpus-signatures, see fuzz/README.md) and every
/// past finding (fuzz/findings/signatures) through the same entry the fuzzer drives, so CI
/// re-checks every input the fuzzer kept without building the fuzzer. An input that traps
/// here is a regression.
@Suite("SignatureFuzz corpus replay")
struct SignatureFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through SignatureFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-signatures", findings: "findings/signatures", minimum: 300, through: SignatureFuzzEntry.all)
        print("SignatureFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
