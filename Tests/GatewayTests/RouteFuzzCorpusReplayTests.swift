import Foundation
import Gateway
import TestSupport
import Testing

/// Replays the saved RouteFuzz corpus (fuzz/corpus-route, see fuzz/README.md) and every past finding
/// (fuzz/findings/route) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("RouteFuzz corpus replay")
struct RouteFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through RouteFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-route", findings: "findings/route", minimum: 50, through: RouteFuzzEntry.all)
        print("RouteFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
