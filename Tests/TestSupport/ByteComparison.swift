/// Where two byte arrays part, for an expectation on a large body: nil when they are equal.
/// `#expect(a == b)` on arrays of megabytes makes Swift Testing compute a diff of the two
/// when they differ, which takes hours; this says what a reader needs (the lengths and the
/// first differing offset) in one pass.
public func firstDifference(_ got: [UInt8], _ expected: [UInt8]) -> String? {
    if got == expected { return nil }
    let shared = min(got.count, expected.count)
    let at = (0..<shared).first { got[$0] != expected[$0] } ?? shared
    return "\(got.count) bytes against \(expected.count) expected; first difference at offset \(at)"
}
