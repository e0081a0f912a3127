import Foundation
import JOSE
import Testing

/// Standard base64 (RFC 4648 §4) against Foundation's coder, every length of a remainder, and
/// the texts it must refuse.
@Suite("Base64: standard alphabet, padded")
struct Base64Tests {
    @Test("Encodes as Foundation does, and decodes back, for lengths 0 to 40")
    func roundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for n in 0...40 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64.standard(bytes)
            #expect(text == Data(bytes).base64EncodedString())
            #expect(Base64.decodeStandard(text) == bytes)
        }
        // RFC 4648 §10's vectors.
        #expect(Base64.standard(Array("foob".utf8)) == "Zm9vYg==")
        #expect(Base64.standard(Array("fooba".utf8)) == "Zm9vYmE=")
        #expect(Base64.standard([0xfb, 0xff]) == "+/8=")
    }

    @Test("Refuses base64url's characters, characters outside the alphabet, and impossible lengths")
    func refusals() {
        #expect(Base64.decodeStandard("-_8=") == nil)
        #expect(Base64.decodeStandard("Zm9v YmE=") == nil)
        #expect(Base64.decodeStandard("Zm9vY") == nil)
        #expect(Base64.decodeStandard("+/8=") == [0xfb, 0xff])
        // Padding: optional, but only the amount that completes the last group.
        #expect(Base64.decodeStandard("+/8") == [0xfb, 0xff])
        #expect(Base64.decodeStandard("+/8==") == nil)
        #expect(Base64.decodeStandard("AAAA====") == nil)
        #expect(Base64.decodeStandard("AA=") == nil)
        #expect(Base64.decodeStandard("AA==") == [0])
        #expect(Base64.decodeStandard("====") == nil)
    }
}
