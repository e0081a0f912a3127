import Testing

@testable import OAuth

/// `isB64Token` reads eight bytes at a time: a bad byte or a misplaced "=" must be caught at
/// every position relative to those chunks, exactly as RFC 6750 §2.1's grammar says.
@Suite("b64token grammar, chunk by chunk")
struct B64TokenTests {
    /// RFC 6750 §2.1 read one byte at a time: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" /
    /// "~" / "+" / "/" ) *"=".
    static func reference(_ s: String) -> Bool {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/".utf8)
        let bytes = Array(s.utf8)
        let body = bytes.prefix { allowed.contains($0) }
        return !body.isEmpty && bytes.dropFirst(body.count).allSatisfy { $0 == UInt8(ascii: "=") }
    }

    @Test func aBadByteAtEveryPosition() {
        for length in [1, 7, 8, 9, 15, 16, 17, 40] {
            let good = String(repeating: "aZ0-._~+/", count: 5).prefix(length)
            #expect(BearerTokenExtractor.isB64Token(String(good)))
            for position in 0..<length {
                for bad: Character in [" ", "=", "!", "\u{7f}", "é", "\u{0}", ","] {
                    var chars = Array(good)
                    chars[position] = bad
                    let token = String(chars)
                    #expect(
                        BearerTokenExtractor.isB64Token(token) == Self.reference(token), "\(token.debugDescription)")
                }
            }
        }
    }

    @Test func paddingOnlyAtTheEnd() {
        for body in 0..<18 {
            for pad in 0..<10 {
                let token = String(repeating: "x", count: body) + String(repeating: "=", count: pad)
                #expect(BearerTokenExtractor.isB64Token(token) == (body > 0), "\(body) + \(pad)")
                #expect(!BearerTokenExtractor.isB64Token(token + "x") || pad == 0)
            }
        }
    }

    @Test func agreesWithTheGrammarOnRandomStrings() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("aZ09-._~+/=!@ #é\u{0}".unicodeScalars)
        for _ in 0..<3000 {
            let length = Int.random(in: 0..<40, using: &rng)
            var s = String.UnicodeScalarView()
            for _ in 0..<length {
                // Mostly token bytes, so that long valid prefixes occur.
                s.append(Int.random(in: 0..<4, using: &rng) == 0 ? alphabet.randomElement()! : "Q")
            }
            let token = String(s)
            #expect(BearerTokenExtractor.isB64Token(token) == Self.reference(token), "\(token.debugDescription)")
        }
    }
}
