import Testing

@testable import JOSE

/// The base64url decoder now reads four characters at a time through pre-shifted tables. It
/// must accept and refuse exactly what the old one did (`RefBase64URL`) and give
/// the same bytes: every input here goes through both.
@Suite("Base64URL: the four-table decoder against the old one")
struct Base64URLDifferentialTests {
    static func compare(_ bytes: [UInt8], _ what: @autoclosure () -> String) {
        let new = bytes.withUnsafeBufferPointer { Base64URL.decode(bytes: $0) }
        let old = bytes.withUnsafeBufferPointer { RefBase64URL.decode(bytes: $0) }
        if new != old { Issue.record("\(what()): new \(String(describing: new)), old \(String(describing: old))") }
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Every byte value in every position of short texts of every length (so each position
    /// of a group, and each tail length, meets every character in and out of the alphabet).
    @Test func everyByteInEveryPosition() {
        var r = DifferentialInputs.Random(state: 3)
        for length in 0...13 {
            let base = (0..<length).map { _ in r.pick(Self.alphabet) }
            Self.compare(base, "length \(length)")
            for position in 0..<length {
                for byte in 0...255 {
                    var text = base
                    text[position] = UInt8(byte)
                    Self.compare(text, "length \(length), byte \(byte) at \(position)")
                }
            }
        }
    }

    /// The last character's unused low bits: only zero is canonical.
    @Test func everyLastCharacterOfEveryTail() {
        for prefix in ["", "QUJD", "QUJDRA"] {
            for first in Self.alphabet {
                for last in Self.alphabet {
                    Self.compare(Array(prefix.utf8) + [first, last], "\(prefix) + two")
                    Self.compare(Array(prefix.utf8) + [first, UInt8(ascii: "A"), last], "\(prefix) + three")
                }
            }
        }
    }

    @Test func encodedRandomBytesAndDamagedCopies() {
        var r = DifferentialInputs.Random(state: 5)
        for _ in 0..<4000 {
            let bytes = (0..<r.below(700)).map { _ in UInt8(r.below(256)) }
            let text = Array(Base64URL.encode(bytes).utf8)
            Self.compare(text, "encoded \(bytes.count) bytes")
            #expect(text.withUnsafeBufferPointer { Base64URL.decode(bytes: $0) } == bytes)
            var damaged = text
            if !damaged.isEmpty {
                damaged[r.below(damaged.count)] = r.pick(Array("=+/ .\n\0~".utf8) + [0x80, 0xff, 0x41, 0x5f])
            }
            Self.compare(damaged, "damaged")
            Self.compare(text + Array("=".utf8), "padded")
        }
    }

    @Test func fuzzCorpusSegments() {
        for (i, file) in DifferentialInputs.fuzzCorpus().enumerated() {
            Self.compare(file, "corpus file \(i)")
            for segment in DifferentialInputs.segments(file) { Self.compare(segment, "corpus file \(i), a segment") }
        }
    }
}
