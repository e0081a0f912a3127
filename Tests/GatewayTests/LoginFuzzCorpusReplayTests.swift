import Foundation
import Gateway
import TestSupport
import Testing

/// Replays the saved LoginFuzz corpus (fuzz/corpus-login, see fuzz/README.md) and every past finding
/// (fuzz/findings/login) through the same entry the fuzzer drives, so CI re-checks every input
/// the fuzzer kept without building the fuzzer. An input that traps here is a regression.
@Suite("LoginFuzz corpus replay")
struct LoginFuzzCorpusReplayTests {
    @Test("every corpus file and past finding runs through LoginFuzzEntry")
    func replay() throws {
        let n = try FuzzCorpus.replay(
            "corpus-login", findings: "findings/login", minimum: 50, through: LoginFuzzEntry.all)
        print("LoginFuzz corpus replay: \(n.corpus) files, \(n.findings) past findings")
    }
}
