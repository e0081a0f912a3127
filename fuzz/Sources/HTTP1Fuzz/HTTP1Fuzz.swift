import CFuzzerDriver
import Glibc
import Reactor

/// Inputs run per parser, printed at exit: libFuzzer counts executions for both together
/// (the first byte of an input picks the parser, see `HTTP1FuzzEntry.all`).
nonisolated(unsafe) var requestRuns = 0
nonisolated(unsafe) var responseRuns = 0
/// HTTP1FUZZ_ONLY=request|response pins the parser (the first byte's low bit is forced), to
/// top up one parser's execution count.
let only: UInt8? = {
    switch getenv("HTTP1FUZZ_ONLY").map({ String(cString: $0) }) {
    case "request": 0
    case "response": 1
    default: nil
    }
}()

/// libFuzzer calls this once per input; `HTTP1FuzzEntry` holds the logic so the corpus
/// replay test (Tests/ReactorTests/HTTP1FuzzCorpusReplayTests.swift) runs the same code.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let only, !bytes.isEmpty { bytes[0] = bytes[0] & 0xFE | only }
    if let first = bytes.first {
        if first & 1 == 0 { requestRuns += 1 } else { responseRuns += 1 }
    }
    HTTP1FuzzEntry.all(bytes)
    return 0
}

/// The process entry (see CFuzzerDriver.h for why libFuzzer's main() is not used).
@main
enum HTTP1Fuzz {
    static func main() {
        atexit {
            let line = "HTTP1Fuzz: request inputs \(requestRuns), response inputs \(responseRuns)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
    }
}
