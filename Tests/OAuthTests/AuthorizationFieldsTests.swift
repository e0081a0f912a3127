import Testing

@testable import OAuth

/// The Authorization field is now read from its bytes in place (`AuthorizationFields`), the
/// scheme compared in ASCII case. Every combination here must come out as it did from the
/// old code, which split a `String` and lowercased the scheme (kept below as the reference).
@Suite("Authorization fields: bytes in place against the old String parsing")
struct AuthorizationFieldsTests {
    /// The old `parseAuthorization`, verbatim.
    static func oldParse(_ value: String) -> PresentedCredential? {
        guard let space = value.utf8.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let scheme = value[..<space].lowercased()
        var start = value.utf8.index(after: space)
        while start < value.utf8.endIndex && value.utf8[start] == UInt8(ascii: " ") {
            start = value.utf8.index(after: start)
        }
        let token = String(value[start...])
        guard BearerTokenExtractor.isB64Token(token) else {
            return .invalid(reason: "malformed \(scheme == "dpop" ? "DPoP" : "Bearer") token")
        }
        switch scheme {
        case "bearer": return .bearer(token)
        case "dpop": return .dpop(token)
        default: return nil
        }
    }

    /// The old `extract`, verbatim but for the parser it calls.
    static func oldExtract(
        authorization: [String], formTokens: [String], queryTokens: [String], sources: TokenSources
    ) -> PresentedCredential {
        var found: [PresentedCredential] = []
        if authorization.count > 1 { return .invalid(reason: "more than one Authorization header") }
        if let header = authorization.first {
            switch oldParse(header) {
            case .some(let c): found.append(c)
            case nil: return .invalid(reason: "the Authorization header is not a Bearer or DPoP credential")
            }
        }
        if !formTokens.isEmpty {
            guard sources.formBody else {
                return .invalid(reason: "access_token in the body is not accepted on this route")
            }
            found.append(
                contentsOf: formTokens.map {
                    BearerTokenExtractor.isB64Token($0) ? .bearer($0) : .invalid(reason: "malformed access_token")
                })
        }
        if !queryTokens.isEmpty {
            guard sources.query else {
                return .invalid(reason: "access_token in the query is not accepted on this route")
            }
            found.append(
                contentsOf: queryTokens.map {
                    BearerTokenExtractor.isB64Token($0) ? .bearer($0) : .invalid(reason: "malformed access_token")
                })
        }
        if found.count > 1 { return .invalid(reason: "more than one access token in the request") }
        return found.first ?? .none
    }

    static let schemes = [
        "Bearer", "bearer", "BEARER", "bEaReR", "DPoP", "dpop", "DPOP", "dPoP", "Basic", "", "Bearerx", "Beare",
        "DPoP\u{0}", "B\u{e9}arer", "Bearer\u{212A}", "\u{212A}", "D\u{130}P", "Bearer\t", "Ｂearer", "\u{FFFD}"
    ]
    static let gaps = [" ", "  ", "   ", "", "\t", " \t"]
    static let tokens = [
        "abc", "abc.def-ghi_~+/==", "a=b", "==", "", "a b", "a\"b", "é", "abc ", " abc", "ab==c", "x.y.z",
        String(repeating: "t", count: 700)
    ]

    @Test func everySchemeGapAndToken() {
        for scheme in Self.schemes {
            for gap in Self.gaps {
                for token in Self.tokens {
                    let value = scheme + gap + token
                    #expect(BearerTokenExtractor.parseAuthorization(value) == Self.oldParse(value), "\(value)")
                }
            }
        }
        for odd in ["", " ", "Bearer", "DPoP", "  Bearer abc", "Bearer\u{0}abc"] {
            #expect(BearerTokenExtractor.parseAuthorization(odd) == Self.oldParse(odd), "\(odd)")
        }
    }

    /// Field counts, form and query tokens, and what each source allows, together.
    @Test func extractionAgreesWithEverySource() {
        let fieldSets: [[String]] = [
            [], ["Bearer abc"], ["DPoP abc"], ["Basic abc"], ["Bearer a b"], ["Bearer x", "Bearer x"]
        ]
        let tokenSets: [[String]] = [[], ["abc"], ["a b"], ["abc", "def"]]
        let sourceSets = [
            TokenSources(), TokenSources(formBody: true), TokenSources(query: true),
            TokenSources(formBody: true, query: true)
        ]
        for fields in fieldSets {
            for form in tokenSets {
                for query in tokenSets {
                    for sources in sourceSets {
                        let new = BearerTokenExtractor.extract(
                            authorization: fields, formTokens: form, queryTokens: query, sources: sources)
                        let old = Self.oldExtract(
                            authorization: fields, formTokens: form, queryTokens: query, sources: sources)
                        #expect(new == old, "\(fields) \(form) \(query) \(sources)")
                    }
                }
            }
        }
    }

    /// Bytes that are not UTF-8 reached the old parser as U+FFFD; in place they are refused
    /// the same way.
    @Test func bytesThatAreNotUTF8() {
        for raw: [UInt8] in [
            Array("Bearer ab".utf8) + [0xff], [0xff] + Array(" abc".utf8), Array("DPoP ".utf8) + [0xc3],
            Array("Bearer".utf8) + [0x80, 0x20] + Array("abc".utf8)
        ] {
            var fields = AuthorizationFields()
            fields.add(raw.span)
            let old = Self.oldExtract(
                authorization: [String(decoding: raw, as: UTF8.self)], formTokens: [], queryTokens: [],
                sources: TokenSources())
            #expect(BearerTokenExtractor.extract(authorization: fields) == old, "\(raw)")
        }
    }
}
