import Testing

@testable import Reactor

/// The byte classes the parsers' inner loops use, checked against the RFCs' own lists byte
/// by byte, and the word-at-a-time field-value check against the byte-at-a-time one.
@Suite("HTTP/1.1 byte classes")
struct HTTP1BytesTests {
    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" /
    /// "|" / "~" / DIGIT / ALPHA (RFC 9110 §5.6.2).
    @Test func tcharMasksAreTheRFCList() {
        let listed = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for b in 0...255 {
            #expect(HTTP1Bytes.isTchar(UInt8(b)) == listed.contains(UInt8(b)), "byte \(b)")
        }
    }

    /// The name table says "t" exactly for the tchars, ":" for the colon alone.
    @Test func nameClassesAreTcharsAndTheColon() {
        let table = HTTP1Bytes.nameClasses
        #expect(table.utf8CodeUnitCount == 256)
        for b in 0...255 {
            let c = table.utf8Start[b]
            let expected: UInt8 =
                HTTP1Bytes.isTchar(UInt8(b)) ? UInt8(ascii: "t") : b == 0x3A ? UInt8(ascii: ":") : UInt8(ascii: ".")
            #expect(c == expected, "byte \(b)")
        }
    }

    /// field-vchar / obs-text / SP / HTAB (RFC 9110 §5.5).
    static func byteByByte(_ bytes: [UInt8], _ from: Int, _ to: Int) -> Bool {
        bytes[from..<to].allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// Every offending byte at every position, in runs of every length up to a few words,
    /// starting at every alignment: the word test may only pass what the byte test passes.
    @Test func fieldValueWordsAgreeWithBytes() {
        let offenders: [UInt8] = [0x00, 0x01, 0x08, 0x0A, 0x0D, 0x1F, 0x7F]
        let fine: [UInt8] = [0x09, 0x20, 0x41, 0x7E, 0x80, 0xFF]
        for length in 0...27 {
            for start in 0..<8 {
                var bytes = [UInt8](repeating: 0x61, count: start + length + 8)
                for (k, b) in fine.enumerated() where start + k < start + length { bytes[start + k] = b }
                let clean = bytes.withUnsafeBufferPointer {
                    HTTP1Bytes.allFieldValueBytes($0, from: start, to: start + length)
                }
                #expect(clean == Self.byteByByte(bytes, start, start + length))
                for position in 0..<length {
                    for bad in offenders {
                        var spoiled = bytes
                        spoiled[start + position] = bad
                        let got = spoiled.withUnsafeBufferPointer {
                            HTTP1Bytes.allFieldValueBytes($0, from: start, to: start + length)
                        }
                        #expect(!got, "byte \(bad) at \(position) of \(length), start \(start)")
                    }
                }
                // An offender just outside the range does not count.
                var outside = bytes
                outside[start + length] = 0x00
                if start > 0 { outside[start - 1] = 0x7F }
                let got = outside.withUnsafeBufferPointer {
                    HTTP1Bytes.allFieldValueBytes($0, from: start, to: start + length)
                }
                #expect(got == Self.byteByByte(outside, start, start + length))
            }
        }
    }
}
