/// Entry points for fuzzing OAuth's parsers of text a browser or a client controls (the
/// libFuzzer target `OAuthFuzz` in `fuzz/`, the gateway's targets and the corpus replay test
/// call these): `ReturnTo` (the `rd` a login or logout returns to), `HTU` (a DPoP proof's
/// `htu`, RFC 9449 §4.3) and `AuthorizationResponse` with the form decoding under it (the
/// login callback's query, RFC 6749 §4.1.2), and the numbers of a credential's claims
/// (`signedNumbers`). They return normally on every input; a failed
/// `fuzzInvariant` is a finding. What each checks is said on each entry.
public enum OAuthFuzzEntry {
    /// The first byte chooses the parser; the rest is its text.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let text = String(decoding: data.dropFirst(), as: UTF8.self)
        switch first % 4 {
        case 0: returnTo(text)
        case 1:
            // Two URIs, cut at the first line feed: the claim and the request.
            let (a, b) = splitAtNewline(text)
            htu(a, b)
        case 2: authorizationResponse(Substring(text), issRequired: first & 0x80 != 0)
        default: signedNumbers(text)
        }
    }

    /// `text` before and after its first "\n" (all of it and "" without one).
    public static func splitAtNewline(_ text: String) -> (String, String) {
        let utf8 = Array(text.utf8)
        guard let n = utf8.firstIndex(of: 0x0A) else { return (text, "") }
        return (String(decoding: utf8[..<n], as: UTF8.self), String(decoding: utf8[(n + 1)...], as: UTF8.self))
    }

    /// One round of percent-decoding on bytes: every `%XX` with two hex digits becomes its
    /// byte, anything else stays. A checker's own decoder, independent of `FormEncoding`.
    static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]),
                let lo = hexValue(bytes[i + 2])
            {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - 0x30
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - 0x61 + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - 0x41 + 10
        default: nil
        }
    }

    /// RFC 3986 §5.2.4 remove_dot_segments on bytes, written from the RFC's steps (the
    /// checker's reference, not `ReturnTo`'s own).
    static func removingDotSegments(_ path: [UInt8]) -> [UInt8] {
        var input = ArraySlice(path)
        var output: [UInt8] = []
        let dot = UInt8(ascii: ".")
        let slash = UInt8(ascii: "/")
        func starts(_ s: [UInt8]) -> Bool { input.starts(with: s) }
        func popLastSegment() {
            if let cut = output.lastIndex(of: slash) { output.removeSubrange(cut...) } else { output.removeAll() }
        }
        while !input.isEmpty {
            if starts([dot, dot, slash]) {  // A
                input = input.dropFirst(3)
            } else if starts([dot, slash]) {
                input = input.dropFirst(2)
            } else if starts([slash, dot, slash]) {  // B
                input = input.dropFirst(2)
            } else if input.elementsEqual([slash, dot]) {
                input = [slash]
            } else if starts([slash, dot, dot, slash]) {  // C
                input = input.dropFirst(3)
                popLastSegment()
            } else if input.elementsEqual([slash, dot, dot]) {
                input = [slash]
                popLastSegment()
            } else if input.elementsEqual([dot]) || input.elementsEqual([dot, dot]) {  // D
                input = []
            } else {  // E
                let from = input.first == slash ? input.startIndex + 1 : input.startIndex
                let end = input[from...].firstIndex(of: slash) ?? input.endIndex
                output += input[..<end]
                input = input[end...]
            }
        }
        return output
    }
}
