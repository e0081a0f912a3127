/// An invariant of a fuzz entry: when it fails, the trap carries its message even in a
/// release build, where `precondition` drops it, so the fuzzer's crash log names the broken
/// invariant. (JOSE has the same for OAuth and the gateway; Reactor does not depend on JOSE.)
@inline(__always)
func fuzzInvariant(
    _ holds: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    if !holds() { fatalError(message(), file: file, line: line) }
}
