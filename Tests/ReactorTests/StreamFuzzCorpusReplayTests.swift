import Foundation
import Reactor
import TestSupport
import Testing

/// Replays the saved StreamFuzz corpus (fuzz/corpus-stream, see fuzz/README.md) and every past finding
/// (fuzz/findings/stream) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("StreamFuzz corpus replay")
struct StreamFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through StreamFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-stream", findings: "findings/stream", minimum: 15, through: StreamFuzzEntry.all)
        print("StreamFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
