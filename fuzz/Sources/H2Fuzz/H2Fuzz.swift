import CFuzzerDriver
import Glibc
import Reactor

/// libFuzzer calls this once per input; `HTTP2FuzzEntry` holds the logic so the corpus replay
/// test (Tests/ReactorTests/HTTP2FuzzCorpusReplayTests.swift) runs exactly the same code.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    HTTP2FuzzEntry.all(bytes)
    return 0
}

/// The process entry (see CFuzzerDriver.h for why libFuzzer's main() is not used).
@main
enum H2Fuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
    }
}
