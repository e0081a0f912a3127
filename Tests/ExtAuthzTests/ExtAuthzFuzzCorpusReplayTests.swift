import ExtAuthz
import TestSupport
import Testing

/// Replays the saved ExtAuthzFuzz corpus (fuzz/corpus-extauthz, see fuzz/README.md) and every
/// past finding (fuzz/findings/extauthz) through the same entry the fuzzer drives.
@Suite("ExtAuthzFuzz corpus replay")
struct ExtAuthzFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through ExtAuthzFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-extauthz", findings: "findings/extauthz", minimum: 10, through: ExtAuthzFuzzEntry.all)
        print("ExtAuthzFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
