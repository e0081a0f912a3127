import Foundation
import Testing

@testable import JOSE

/// The attacker's side of JWS verification (RFC 8725 §2–3, RFC 7515 §5.2): every test sends
/// a bad token and checks the error *code*, so a check that fails for the wrong reason (or
/// a later check that happens to catch it) shows up as a failure.
@Suite("Attacks on JWS parsing, key selection and signatures")
struct AttackTests {
    // MARK: alg none

    @Test("alg none in any spelling is not an algorithm", arguments: ["none", "None", "NONE", "nOnE"], [true, false])
    func algNone(_ spelling: String, emptySignature: Bool) throws {
        let input =
            Base64URL.encode(#"{"alg":"\#(spelling)"}"#) + "." + Base64URL.encode(#"{"sub":"admin","exp":1700003600}"#)
        let token = input + "." + (emptySignature ? "" : Base64URL.encode([UInt8](repeating: 0, count: 32)))
        expectJOSEError(.algorithmNotAllowed) { _ = try CompactJWS(token) }
        let verifier = JWTVerifier(
            keys: try Attack.verifierSet(.HS256), algorithms: Set(JWSAlgorithm.allCases), policy: JWTClaimsPolicy())
        expectJOSEError(.algorithmNotAllowed) { _ = try verifier.verify(token, now: Attack.now) }
    }

    @Test("an algorithm outside the allow-list is refused before any key is looked at")
    func algorithmOutsideAllowList() throws {
        let token = try Attack.token(.ES256)
        let verifier = JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.RS256, .EdDSA])
        expectJOSEError(.algorithmNotAllowed) { try verifier.verify(CompactJWS(token)) }
    }

    // MARK: alg/key confusion (HS256 keyed with an RSA public key)

    /// A fixed RSA-2048 public key, as an IdP publishes it.
    static let rsaPublicPEM = """
        -----BEGIN PUBLIC KEY-----
        MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAl9IpSZbXDj4U+KCdn+5N
        Ed3Iu77W1xBNv17De7799+f0d9r6k7qZxMMTcoOeUBzXeqoewHV+8sc7n9D7ld1y
        giAE8VOaB06mjVXVaBVcXpQssUWmovVC1jSvYMN9dZBRjqsIHWX0C66wkQ5R4HTX
        p5XJAN1CBwRFVHmtuf6gFYtbhahiXuJXgHmP1f5CN5T99wMqIxOoXwpZk3FCBZDZ
        ub6l8lpJisARQ9IEYdPaospddN0IUsQAUKDADPheCkbYTZNH21pq4DZEHv1jXu0W
        wPj6zgsFQq9m0RcWv0ZLvnN3HIW3XYoEdxoByChgYdX5wwDO8kWT4LDyg2LCD4Sv
        EQIDAQAB
        -----END PUBLIC KEY-----

        """

    /// The byte strings a confused verifier might use as the HMAC secret.
    static func confusionSecrets() throws -> [(String, [UInt8])] {
        let key = try JWK(pem: rsaPublicPEM, kid: "rsa-1")
        let body = rsaPublicPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try #require(Data(base64Encoded: body))
        let n = try #require(key.publicJWK()["n"]?.string.flatMap { Base64URL.decode($0) })
        return [
            ("PEM", Array(rsaPublicPEM.utf8)), ("PEM without final newline", Array(rsaPublicPEM.dropLast().utf8)),
            ("DER", Array(der)), ("n", n)
        ]
    }

    @Test("HS256 signed with the RSA public key as secret finds no key (key type must match)")
    func hmacWithRSAPublicKey() throws {
        let rsa = try JWK(pem: Self.rsaPublicPEM, kid: "rsa-1")
        let set = try JWKSet(
            json: JSONSerializer.serialize(.object(JSONObject(["keys": .array([.object(rsa.publicJWK())])]))))
        let verifier = JWSVerifier(keys: set, algorithms: [.RS256, .HS256])
        for (name, secret) in try Self.confusionSecrets() {
            let attacker = JWK(
                kty: "oct", kid: nil, use: nil, keyOps: nil, alg: nil, crv: nil,
                material: .symmetric(secret), publicMembers: ["kty": "oct"])
            let noKid = try Attack.forge(
                header: #"{"alg":"HS256"}"#, payload: #"{"sub":"admin"}"#, alg: .HS256, key: attacker)
            expectJOSEError(.keyNotFound, "secret = \(name), no kid") { try verifier.verify(CompactJWS(noKid)) }
            // Naming the RSA key's kid gets the reason that key does not fit.
            let withKid = try Attack.forge(
                header: #"{"alg":"HS256","kid":"rsa-1"}"#, payload: #"{"sub":"admin"}"#, alg: .HS256, key: attacker)
            expectJOSEError(.keyMismatch, "secret = \(name), kid of the RSA key") {
                try verifier.verify(CompactJWS(withKid))
            }
            expectJOSEError(.keyMismatch, "secret = \(name), embedded key path") {
                try JWSVerifier.verify(CompactJWS(noKid), embeddedKey: rsa, algorithms: [.HS256])
            }
            let input = Array(Attack.segment(0, of: noKid).utf8) + [0x2e] + Array(Attack.segment(1, of: noKid).utf8)
            let mac = try #require(Base64URL.decode(Attack.segment(2, of: noKid)))
            expectJOSEError(.keyMismatch, "secret = \(name), raw verify") {
                _ = try rsa.verify(.HS256, message: input, signature: mac)
            }
        }
    }

    @Test(
        "a key published for one algorithm does not verify another of the same type",
        arguments: [
            (JWSAlgorithm.RS256, JWSAlgorithm.PS256), (.PS256, .RS256), (.ES256, .ES384)
        ])
    func crossAlgorithm(_ published: JWSAlgorithm, _ sent: JWSAlgorithm) throws {
        // The attacker's token claims `sent` but the set only has `published`'s key.
        let set = try Attack.verifierSet(published)
        let attacker = try JWK.generate(for: sent, kid: nil)
        let token = try Attack.forge(header: #"{"alg":"\#(sent.rawValue)"}"#, payload: "{}", alg: sent, key: attacker)
        expectJOSEError(.keyNotFound) {
            try JWSVerifier(keys: set, algorithms: [published, sent]).verify(CompactJWS(token))
        }
    }

    // MARK: keys the token brings along

    @Test(
        "a key or key location in the header is never used", arguments: ["jwk", "jku", "x5u", "x5c"],
        [JWSAlgorithm.RS256, .ES256, .EdDSA])
    func embeddedKeyIgnored(_ member: String, _ alg: JWSAlgorithm) throws {
        let attacker = try JWK.generate(for: alg, kid: "attacker")
        let value: String
        switch member {
        case "jwk": value = JSONSerializer.serialize(.object(attacker.publicJWK()))
        case "x5c": value = #"["MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAl9IpSZbXDj4U"]"#
        default: value = #""https://attacker.example/keys""#
        }
        let set = try Attack.verifierSet(alg)
        let verifier = JWSVerifier(keys: set, algorithms: [alg])
        for (kid, code) in [
            (nil, JOSEError.Code.badSignature), ("attacker", .keyNotFound), (alg.rawValue, .badSignature)
        ] {
            let kidMember = kid.map { #","kid":"\#($0)""# } ?? ""
            let header = #"{"alg":"\#(alg.rawValue)"\#(kidMember),"\#(member)":\#(value)}"#
            let token = try Attack.forge(header: header, payload: #"{"sub":"admin"}"#, alg: alg, key: attacker)
            expectJOSEError(code, "kid \(kid ?? "absent")") { try verifier.verify(CompactJWS(token)) }
        }
    }

    // MARK: key selection

    @Test("a kid that two keys carry selects neither")
    func kidFitsTwoKeys() throws {
        let a = try JWK.generate(for: .ES256, kid: "shared")
        let b = try JWK.generate(for: .ES256, kid: "shared")
        let json = JSONSerializer.serialize(
            .object(JSONObject(["keys": .array([.object(a.publicJWK()), .object(b.publicJWK())])])))
        let token = try Attack.forge(header: #"{"alg":"ES256","kid":"shared"}"#, payload: "{}", alg: .ES256, key: a)
        for set in [try JWKSet(json: json), JWKSet(keys: [a, b])] {
            expectJOSEError(.ambiguousKey) {
                try JWSVerifier(keys: set, algorithms: [.ES256]).verify(CompactJWS(token))
            }
        }
        // Even when only one of the two could verify this algorithm.
        let rsa = try JWK.generate(for: .RS256, kid: "shared")
        let mixed = JWKSet(keys: [try JWK(object: a.publicJWK()), try JWK(object: rsa.publicJWK())])
        expectJOSEError(.ambiguousKey) { try JWSVerifier(keys: mixed, algorithms: [.ES256]).verify(CompactJWS(token)) }
    }

    @Test("no kid and two keys fit: no guessing")
    func noKidTwoKeysFit() throws {
        let a = try JWK.generate(for: .ES256, kid: "a")
        let b = try JWK.generate(for: .ES256, kid: "b")
        let set = JWKSet(keys: [try JWK(object: a.publicJWK()), try JWK(object: b.publicJWK())])
        let token = try Attack.forge(header: #"{"alg":"ES256"}"#, payload: "{}", alg: .ES256, key: a)
        expectJOSEError(.ambiguousKey) { try JWSVerifier(keys: set, algorithms: [.ES256]).verify(CompactJWS(token)) }
        // The same set with the kid named works: the rule is about guessing, not the set.
        let named = try Attack.forge(header: #"{"alg":"ES256","kid":"a"}"#, payload: "{}", alg: .ES256, key: a)
        #expect(try JWSVerifier(keys: set, algorithms: [.ES256]).verify(CompactJWS(named)).kid == "a")
    }

    @Test("a kid that fits no key", arguments: ["unknown", "", "ES256 ", "es256"])
    func kidFitsNone(_ kid: String) throws {
        let token = try Attack.forge(
            header: #"{"alg":"ES256","kid":"\#(kid)"}"#, payload: "{}", alg: .ES256, key: Attack.key(.ES256))
        expectJOSEError(.keyNotFound) {
            try JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256]).verify(CompactJWS(token))
        }
    }

    // MARK: signature bytes

    enum SignatureMutation: String, CaseIterable, Sendable {
        case dropLast, dropFirst, appendZero, prependZero, half, doubled, flipLastBit, zeroed
        func apply(_ s: [UInt8]) -> [UInt8] {
            switch self {
            case .dropLast: Array(s.dropLast())
            case .dropFirst: Array(s.dropFirst())
            case .appendZero: s + [0]
            case .prependZero: [0] + s
            case .half: Array(s.prefix(s.count / 2))
            case .doubled: s + s
            case .flipLastBit: s.dropLast() + [s.last! ^ 1]
            case .zeroed: [UInt8](repeating: 0, count: s.count)
            }
        }
    }

    @Test("truncated, extended and altered signatures", arguments: Attack.algorithms, SignatureMutation.allCases)
    func signatureMutations(_ alg: JWSAlgorithm, _ mutation: SignatureMutation) throws {
        let token = try Attack.token(alg)
        let verifier = JWSVerifier(keys: try Attack.verifierSet(alg), algorithms: [alg])
        try verifier.verify(CompactJWS(token))
        let bad = Attack.replacing(segment: 2, of: token) { Base64URL.encode(mutation.apply(Base64URL.decode($0)!)) }
        expectJOSEError(.badSignature) { try verifier.verify(CompactJWS(bad)) }
    }

    @Test("ECDSA: a DER signature, or r‖s of zeros or of the group order, is not a signature")
    func ecdsaEncodings() throws {
        let token = try Attack.token(.ES256)
        let verifier = JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256])
        let raw = try #require(Base64URL.decode(Attack.segment(2, of: token)))
        let der = try #require(ECDSASignature.der(fromRaw: raw))
        // The order n of P-256 (SEC 2 §2.4.2).
        let order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51
        ]
        // CVE-2022-21449 ("psychic signatures"): r = s = 0 must not verify anything.
        for (name, sig) in [
            ("DER", der), ("r=s=0", [UInt8](repeating: 0, count: 64)), ("r=s=n", order + order),
            ("DER padded to 64", Array((der + [UInt8](repeating: 0, count: 64)).prefix(64)))
        ] {
            let bad = Attack.replacing(segment: 2, of: token) { _ in Base64URL.encode(sig) }
            expectJOSEError(.badSignature, "\(name)") { try verifier.verify(CompactJWS(bad)) }
        }
    }

    @Test("a valid signature over a different header or payload")
    func spliced() throws {
        let token = try Attack.token(.ES256)
        let other = try Attack.token(.ES256, payload: #"{"sub":"admin","exp":1700003600}"#)
        let spliced =
            Attack.segment(0, of: token) + "." + Attack.segment(1, of: other) + "." + Attack.segment(2, of: token)
        expectJOSEError(.badSignature) {
            try JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256]).verify(CompactJWS(spliced))
        }
    }

    // MARK: size

    @Test("tokens over 16 KB are refused before parsing; exactly 16 KB is parsed")
    func oversized() throws {
        // Not even a JWS: the size check must come first.
        let junk = String(repeating: "!", count: CompactJWS.defaultMaxSize + 1)
        expectJOSEError(.tooLarge) { _ = try CompactJWS(junk) }
        expectJOSEError(.malformed) { _ = try CompactJWS(String(junk.dropFirst())) }
        expectJOSEError(.tooLarge) {
            _ = try CompactJWS(String(repeating: "é", count: CompactJWS.defaultMaxSize / 2 + 1))
        }
        expectJOSEError(.tooLarge) { _ = try CompactJWS(try Attack.token(.ES256), maxSize: 100) }

        // A validly signed token of exactly the limit verifies; one byte more does not parse.
        // base64url lengths are never 1 mod 4, so a filler header member absorbs the rest.
        func encodedLength(_ n: Int) -> Int { (4 * n + 2) / 3 }
        let verifier = JWTVerifier(
            keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: JWTClaimsPolicy())
        var exact: String?
        search: for filler in 0..<3 {
            let header = #"{"alg":"ES256","kid":"ES256","x":"\#(String(repeating: "y", count: filler))"}"#
            let skeleton = #"{"exp":1700003600,"pad":""}"#.utf8.count
            for pad in 12_000..<12_300 {
                guard
                    encodedLength(header.utf8.count) + 1 + encodedLength(skeleton + pad) + 1 + 86
                        == CompactJWS.defaultMaxSize
                else { continue }
                let payload = #"{"exp":1700003600,"pad":"\#(String(repeating: "x", count: pad))"}"#
                exact = try Attack.forge(header: header, payload: payload, alg: .ES256, key: Attack.key(.ES256))
                break search
            }
        }
        let atLimit = try #require(exact)
        _ = try verifier.verify(atLimit, now: Attack.now)
        expectJOSEError(.tooLarge) { _ = try verifier.verify(atLimit + "A", now: Attack.now) }
    }

    // MARK: duplicates

    @Test(
        "duplicate header members",
        arguments: [
            #"{"alg":"ES256","alg":"none"}"#,
            #"{"alg":"none","alg":"ES256"}"#,
            #"{"alg":"ES256","\u0061lg":"HS256"}"#,
            #"{"alg":"ES256","kid":"ES256","kid":"other"}"#,
            #"{"alg":"ES256","crit":["x"],"crit":[]}"#,
            #"{"alg":"ES256","jwk":{"kty":"EC","kty":"oct"}}"#
        ])
    func duplicateHeaderMembers(_ header: String) throws {
        let input = Base64URL.encode(header) + "." + Base64URL.encode("{}")
        let token = input + "." + Base64URL.encode(try Attack.key(.ES256).sign(.ES256, message: Array(input.utf8)))
        expectJOSEError(.duplicateMember) { _ = try CompactJWS(token) }
    }

    /// Past `JSONObject.indexedFrom` members lookups go through a dictionary: a duplicate
    /// hidden behind 40 filler members, spelled as an escape or as a canonically equivalent
    /// Unicode name (the Kelvin sign is "K"), is still a duplicate.
    @Test(
        "duplicate members behind many others",
        arguments: [
            (#""alg":"ES256""#, #""alg":"none""#),
            (#""alg":"ES256""#, #""\u0061lg":"none""#),
            (#""K":1"#, #""\u212A":2"#),
            (#""\u00e9":1"#, #""e\u0301":2"#),
            (#""a_long_member_name_past_15_bytes":1"#, #""a_long_member_name_past_15_bytes":2"#)
        ])
    func duplicateMembersBehindMany(_ first: String, _ second: String) {
        let filler = (0..<40).map { #""m\#($0)":\#($0)"# }.joined(separator: ",")
        for json in ["{\(first),\(filler),\(second)}", "{\(filler),\(first),\(second)}"] {
            expectJOSEError(.duplicateMember) { _ = try JSONParser.parseObject(Array(json.utf8), what: "test") }
        }
    }

    @Test(
        "duplicate claims (after signature verification, the claims set is refused)",
        arguments: [
            #"{"sub":"alice","sub":"admin","exp":1700003600}"#,
            #"{"exp":1,"exp":1700003600}"#,
            #"{"sub":"alice","s\u0075b":"admin","exp":1700003600}"#,
            #"{"exp":1700003600,"cnf":{"jkt":"a","jkt":"b"}}"#,
            #"{"exp":1700003600,"aud":["api"],"aud":"evil"}"#
        ])
    func duplicateClaims(_ payload: String) throws {
        let token = try Attack.token(.ES256, payload: payload)
        let verifier = JWTVerifier(
            keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: JWTClaimsPolicy())
        expectJOSEError(.duplicateMember) { _ = try verifier.verify(token, now: Attack.now) }
        expectJOSEError(.duplicateMember) { _ = try CompactJWS(token).claims() }
    }

    // MARK: structure

    @Test(
        "the header must be a JSON object",
        arguments: [
            #"[{"alg":"ES256"}]"#, #""ES256""#, "42", "-1.5e3", "null", "true", "[]", "", " "
        ])
    func headerNotAnObject(_ header: String) throws {
        let token =
            Base64URL.encode(header) + "." + Base64URL.encode("{}") + "."
            + Base64URL.encode([UInt8](repeating: 1, count: 64))
        expectJOSEError(.malformed) { _ = try CompactJWS(token) }
    }

    @Test(
        "garbage after the JSON value, or after the token",
        arguments: [
            #"{"alg":"ES256"}x"#, #"{"alg":"ES256"}}"#, #"{"alg":"ES256"}{}"#, "{\"alg\":\"ES256\"}\u{0}",
            #"{"alg":"ES256"},"#,
            #"{"alg":"ES256",}"#, #"{"alg":"ES256"} // comment"#
        ])
    func trailingGarbageInHeader(_ header: String) throws {
        let input = Base64URL.encode(header) + "." + Base64URL.encode("{}")
        let token = input + "." + Base64URL.encode(try Attack.key(.ES256).sign(.ES256, message: Array(input.utf8)))
        expectJOSEError(.malformed) { _ = try CompactJWS(token) }
    }

    @Test("garbage after a signed claims set")
    func trailingGarbageInClaims() throws {
        let verifier = JWTVerifier(
            keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: JWTClaimsPolicy())
        for payload in [
            #"{"exp":1700003600}x"#, #"{"exp":1700003600}{"sub":"admin"}"#, "{\"exp\":1700003600}\u{0}",
            #"{"exp":1700003600,}"#
        ] {
            let token = try Attack.token(.ES256, payload: payload)
            expectJOSEError(.malformed, "\(payload)") { _ = try verifier.verify(token, now: Attack.now) }
        }
    }

    @Test("garbage around the token", arguments: [" ", "\n", "\r\n", "\t", "\u{0}", ".", "..", ".e30", "=", "é"])
    func trailingGarbageAroundToken(_ garbage: String) throws {
        let token = try Attack.token(.ES256)
        let verifier = JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256])
        expectJOSEError(.malformed, "suffix") { try verifier.verify(CompactJWS(token + garbage)) }
        expectJOSEError(.malformed, "prefix") { try verifier.verify(CompactJWS(garbage + token)) }
    }

    @Test("exactly three parts")
    func partCount() throws {
        let token = try Attack.token(.ES256)
        let parts = token.split(separator: ".").map(String.init)
        for bad in [
            parts[0] + "." + parts[1], parts[0], token + ".", token + "." + parts[2], token + ".e30.e30",
            "", ".", "..", "...", "...."
        ] {
            expectJOSEError(.malformed, "\(bad.prefix(20))…") { _ = try CompactJWS(bad) }
        }
    }

    @Test("empty parts")
    func emptyParts() throws {
        let token = try Attack.token(.ES256)
        let verifier = JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256])
        expectJOSEError(.malformed, "empty header") {
            try verifier.verify(CompactJWS(Attack.replacing(segment: 0, of: token) { _ in "" }))
        }
        expectJOSEError(.malformed, "empty signature") {
            try verifier.verify(CompactJWS(Attack.replacing(segment: 2, of: token) { _ in "" }))
        }
        // An empty payload is a legal JWS (RFC 7515 §7.1), but never a JWT claims set.
        let empty = try Attack.forge(header: #"{"alg":"ES256"}"#, payload: "", alg: .ES256, key: Attack.key(.ES256))
        #expect(Attack.segment(1, of: empty).isEmpty)
        try verifier.verify(CompactJWS(empty))
        expectJOSEError(.malformed, "empty claims") {
            _ = try JWTVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256], policy: JWTClaimsPolicy())
                .verify(empty, now: Attack.now)
        }
    }

    enum SegmentMutation: String, CaseIterable, Sendable {
        case padding, doublePadding, leadingSpace, trailingSpace, innerNewline, innerTab, plus, slash, percent,
            nonASCII, standardAlphabet
        func apply(_ s: String) -> String {
            let mid = s.index(s.startIndex, offsetBy: s.count / 2)
            switch self {
            case .padding: return s + "="
            case .doublePadding: return s + "=="
            case .leadingSpace: return " " + s
            case .trailingSpace: return s + " "
            case .innerNewline: return String(s[..<mid]) + "\n" + String(s[mid...])
            case .innerTab: return String(s[..<mid]) + "\t" + String(s[mid...])
            case .plus: return "+" + String(s.dropFirst())
            case .slash: return "/" + String(s.dropFirst())
            case .percent: return String(s[..<mid]) + "%" + String(s[s.index(after: mid)...])
            case .nonASCII: return String(s[..<mid]) + "é" + String(s[s.index(after: mid)...])
            case .standardAlphabet:
                // The same bytes in RFC 4648 §4 base64 (+ / and = padding).
                let std = Data(Base64URL.decode(s)!).base64EncodedString()
                return std == s ? s + "=" : std
            }
        }
    }

    @Test(
        "padding, whitespace and characters outside base64url in any segment",
        arguments: [0, 1, 2], SegmentMutation.allCases)
    func segmentAlphabet(_ index: Int, _ mutation: SegmentMutation) throws {
        let token = try Attack.token(.ES256)
        let bad = Attack.replacing(segment: index, of: token, with: mutation.apply)
        #expect(bad != token)
        expectJOSEError(.malformed) { _ = try CompactJWS(bad) }
    }

    @Test("non-canonical trailing bits in any segment")
    func nonCanonicalTrailingBits() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        // Header 29 bytes, payload 16 bytes, signature 64 bytes: none a multiple of 3.
        let token = try Attack.forge(
            header: #"{"alg":"ES256","kid":"ES256"}"#, payload: #"{"sub":"alice1"}"#, alg: .ES256,
            key: Attack.key(.ES256))
        let verifier = JWSVerifier(keys: try Attack.verifierSet(.ES256), algorithms: [.ES256])
        try verifier.verify(CompactJWS(token))
        for index in 0..<3 {
            let segment = Attack.segment(index, of: token)
            try #require(segment.count % 4 != 0)
            let last = alphabet.firstIndex(of: segment.last!)!
            let altered = String(segment.dropLast()) + String(alphabet[last ^ 1])
            // Both texts would decode to the same bytes if the unused bits were ignored.
            #expect(Base64URL.decode(altered) == nil)
            let bad = Attack.replacing(segment: index, of: token) { _ in altered }
            expectJOSEError(.malformed, "segment \(index)") { try verifier.verify(CompactJWS(bad)) }
        }
        for text in ["QR", "QUF", "Q", "QQ=", "QQ==", "QUFB=", "QQ\n", "Q Q"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
        #expect(Base64URL.decode("QQ") == [0x41])
        #expect(Base64URL.decode("QUE") == [0x41, 0x41])
    }

    // MARK: extensions that change what is signed

    @Test(
        "crit naming an extension tokengate does not understand",
        arguments: [
            #"{"alg":"ES256","crit":["exp"],"exp":1}"#,
            #"{"alg":"ES256","crit":["http://example.invalid/UNDEFINED"],"http://example.invalid/UNDEFINED":true}"#,
            #"{"alg":"ES256","crit":["b64"],"b64":false}"#,
            #"{"alg":"ES256","crit":["b64"],"b64":true}"#,
            #"{"alg":"ES256","crit":["alg"]}"#
        ])
    func unknownCritical(_ header: String) throws {
        let token = try Attack.forge(header: header, payload: "{}", alg: .ES256, key: Attack.key(.ES256))
        expectJOSEError(.unsupportedCritical) { _ = try CompactJWS(token) }
    }

    @Test(
        "crit that is not a non-empty array of names",
        arguments: [
            #"{"alg":"ES256","crit":[]}"#, #"{"alg":"ES256","crit":"exp"}"#, #"{"alg":"ES256","crit":[1]}"#,
            #"{"alg":"ES256","crit":null}"#
        ])
    func malformedCritical(_ header: String) throws {
        let token = try Attack.forge(header: header, payload: "{}", alg: .ES256, key: Attack.key(.ES256))
        expectJOSEError(.malformed) { _ = try CompactJWS(token) }
    }

    @Test(
        "b64: false (RFC 7797 unencoded payload) is refused",
        arguments: [
            #"{"alg":"ES256","b64":false}"#, #"{"alg":"ES256","b64":"false"}"#, #"{"alg":"ES256","b64":0}"#,
            #"{"alg":"ES256","b64":null}"#
        ])
    func unencodedPayload(_ header: String) throws {
        let token = try Attack.forge(header: header, payload: "{}", alg: .ES256, key: Attack.key(.ES256))
        expectJOSEError(.unsupportedCritical) { _ = try CompactJWS(token) }
    }
}
