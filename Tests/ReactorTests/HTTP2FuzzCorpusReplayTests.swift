import Reactor
import TestSupport
import Testing

/// Replays the saved H2Fuzz corpus (fuzz/corpus-h2, see fuzz/README.md) and every past finding
/// (fuzz/findings/h2) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("H2Fuzz corpus replay")
struct HTTP2FuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through HTTP2FuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay("corpus-h2", findings: "findings/h2", minimum: 30, through: HTTP2FuzzEntry.all)
        print("H2Fuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
