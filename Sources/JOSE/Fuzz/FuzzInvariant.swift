/// An invariant of a fuzz entry (here and in OAuth's and the gateway's `Fuzz/` folders): when
/// it fails, the trap carries its message even in a release build, where `precondition`
/// drops it, so the fuzzer's crash log names the broken invariant.
@inline(__always)
public func fuzzInvariant(
    _ holds: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    if !holds() { fatalError(message(), file: file, line: line) }
}
