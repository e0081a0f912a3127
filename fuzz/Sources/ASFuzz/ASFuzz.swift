import CFuzzerDriver
import Glibc
import OAuth

/// libFuzzer calls this once per input; `ASFuzzEntry` holds the logic so the corpus replay
/// test (Tests/OAuthTests/ASFuzzCorpusReplayTests.swift) runs exactly the same code.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    ASFuzzEntry.all(bytes)
    return 0
}

/// The process entry (see CFuzzerDriver.h for why libFuzzer's main() is not used).
@main
enum ASFuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
    }
}
