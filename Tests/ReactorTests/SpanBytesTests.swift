import Reactor
import Testing

/// The span helpers Reactor gives the modules above it, against the plain collection
/// operations they stand for.
@Suite("Span bytes: memchr, memcmp and copies behind a safe view")
struct SpanBytesTests {
    static let samples: [[UInt8]] = [[], [0x3B], Array("a=1; b=2;;c".utf8), Array(repeating: 0x61, count: 300) + [0x3B]]

    @Test(arguments: samples)
    func firstIndexIsTheCollectionsFromEveryStart(bytes: [UInt8]) {
        for from in 0...bytes.count + 1 {
            let want = from < bytes.count ? bytes[from...].firstIndex(of: 0x3B) : nil
            let got = bytes.span.firstIndex(of: 0x3B, from: from)
            #expect(got == want, "from \(from)")
        }
        let contains = bytes.span.contains(0x3B)
        #expect(contains == bytes.contains(0x3B))
    }

    @Test(arguments: samples)
    func equalityAndCopies(bytes: [UInt8]) {
        let copy = Array(bytes)
        let longer = bytes + [0]
        let same = bytes.span.elementsEqual(copy.span)
        let sameAsLonger = bytes.span.elementsEqual(longer.span)
        #expect(same && !sameAsLonger)
        if !bytes.isEmpty {
            var other = bytes
            other[other.count - 1] ^= 1
            let sameAsOther = bytes.span.elementsEqual(other.span)
            #expect(!sameAsOther)
        }
        let array = [UInt8](bytes.span)
        #expect(array == bytes)
        var out: [UInt8] = [7]
        out.append(copying: bytes.span)
        #expect(out == [7] + bytes)
        let text = String(decodingUTF8: bytes.span)
        #expect(text == String(decoding: bytes, as: UTF8.self))
    }

    /// Copies into reserved capacity: at the end of what is there, exactly filling it, and
    /// nothing for an empty span or literal (also adding no capacity to an empty array).
    @Test(arguments: samples)
    func outputSpanCopies(bytes: [UInt8]) {
        var out: [UInt8] = [7]
        out.append(addingCapacity: bytes.count + 3) { o in
            o.append(copying: bytes.span)
            o.append("ab;")
            o.append("")
            o.append(copying: [UInt8]().span)
            #expect(o.freeCapacity == 0)
        }
        #expect(out == [7] + bytes + Array("ab;".utf8))
        // Reserved first: an append into the runtime's one shared empty-array storage writes
        // its count there, and the parallel cases of this test would race on it (TSan).
        var empty: [UInt8] = []
        empty.reserveCapacity(8)
        empty.append(addingCapacity: 0) { o in
            o.append("")
            o.append(copying: [UInt8]().span)
        }
        #expect(empty.isEmpty)
    }

    @Test func illFormedUTF8IsReplaced() {
        let bytes: [UInt8] = [0x61, 0xFF, 0x62]
        let text = String(decodingUTF8: bytes.span)
        #expect(text == "a\u{FFFD}b")
    }
}
