import Foundation
import OAuth
import TestSupport
import Testing

/// Replays the saved OAuthFuzz corpus (fuzz/corpus-oauth, see fuzz/README.md) and every past finding
/// (fuzz/findings/oauth) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("OAuthFuzz corpus replay")
struct OAuthFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through OAuthFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-oauth", findings: "findings/oauth", minimum: 50, through: OAuthFuzzEntry.all)
        print("OAuthFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
