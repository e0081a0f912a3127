import CFuzzerDriver
import Glibc
import MessageSignatures

/// libFuzzer calls this once per input; `SignatureFuzzEntry` holds the logic so the corpus replay
/// test (Tests/MessageSignaturesTests/SignatureFuzzCorpusReplayTests.swift) runs exactly the same code.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    SignatureFuzzEntry.all(bytes)
    return 0
}

/// The process entry (see CFuzzerDriver.h for why libFuzzer's main() is not used).
@main
enum SignatureFuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
    }
}
