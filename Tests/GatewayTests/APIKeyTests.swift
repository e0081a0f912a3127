import JOSE
import Testing

@testable import Gateway

/// API keys below the request path: the key's text (prefix, base62, check digits), its
/// digest, the table a request is checked against, and the key file with its problems' lines.
@Suite("API keys: format, digest, table, file")
struct APIKeyTests {
    @Test func checkDigitsAreCRC32AsZlibComputesIt() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

    @Test func base62IsFixedWidthAndReadsBack() {
        #expect(Base62.encode([UInt8](repeating: 0, count: 32), digits: 43) == String(repeating: "0", count: 43))
        let top = Base62.encode([UInt8](repeating: 0xFF, count: 32), digits: 43)
        #expect(top.utf8.count == 43 && top.utf8.allSatisfy(Base62.isDigit))
        #expect(Base62.encode(UInt32.max, digits: 6) == "4gfFC3")
        #expect(Base62.decode(Array("4gfFC3".utf8)) == UInt64(UInt32.max))
        #expect(Base62.decode(Array("4g-FC3".utf8)) == nil)
    }

    @Test func aNewKeyHasItsShapeAndParses() throws {
        let key = APIKey.generate()
        #expect(key.text.hasPrefix("tgk_"))
        #expect(key.text.utf8.count == 53)
        #expect(try APIKey.parse(Array(key.text.utf8)).get() == key)
        #expect(APIKey.generate() != key)
        #expect(key.digest.description.hasPrefix("sha256:") && key.digest.description.utf8.count == 71)
        #expect(APIKeyDigest(key.digest.description) == key.digest)
        #expect(
            APIKeyDigest(key.digest.description.uppercased().replacingOccurrences(of: "SHA256:", with: "sha256:"))
                == key.digest)
    }

    /// Every one-character typo and every swap of two neighbours is caught by the check
    /// digits, before any lookup.
    @Test func typosAreMalformedNotUnknown() {
        let key = Array(APIKey.generate().text.utf8)
        for i in 4..<key.count {
            var typo = key
            typo[i] = typo[i] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
            #expect(APIKey.parse(typo) == .failure(.checkDigits), "a typo at \(i)")
            if i + 1 < key.count, key[i] != key[i + 1] {
                var swapped = key
                swapped.swapAt(i, i + 1)
                #expect(APIKey.parse(swapped) == .failure(.checkDigits), "a swap at \(i)")
            }
        }
        #expect(APIKey.parse(Array("tgx_".utf8) + key[4...]) == .failure(.prefix))
        #expect(APIKey.parse(key.dropLast()) == .failure(.length))
        #expect(APIKey.parse(key + [UInt8(ascii: "0")]) == .failure(.length))
        var bad = key
        bad[10] = UInt8(ascii: "-")
        #expect(APIKey.parse(bad) == .failure(.character))
        #expect(APIKey.parse(Array("".utf8)) == .failure(.prefix))
    }

    @Test func digestsAreRefusedInAnyOtherForm() {
        let hex = String(repeating: "ab", count: 32)
        #expect(APIKeyDigest("sha256:" + hex) != nil)
        for bad in [
            "sha256:" + hex.dropLast(), "sha256:" + hex + "0", "sha512:" + hex, hex, "sha256:" + hex.dropLast() + "g"
        ] {
            #expect(APIKeyDigest(String(bad)) == nil, "\(bad)")
        }
    }

    static func entry(_ key: APIKey, id: String = "k_1", expires: Int64? = nil, notBefore: Int64? = nil) -> APIKeyEntry
    {
        APIKeyEntry(
            id: id, digest: key.digest, sub: "partner-acme", clientID: "acme-sync", scopes: ["orders:read"],
            claims: [("org", .string("acme"))], expires: expires, notBefore: notBefore)
    }

    @Test func theTableSaysWhatAKeyComesTo() {
        let key = APIKey.generate()
        let staged = APIKey.generate()
        let table = APIKeyTable([
            Self.entry(key, expires: 2_000), Self.entry(staged, id: "k_2", notBefore: 1_500)
        ])
        let text = Array(key.text.utf8)
        #expect(table.check(text, now: 1_000) == .valid(Self.entry(key, expires: 2_000)))
        // No leeway: from the second it names on, the key fails.
        #expect(table.check(text, now: 1_999.9).label == "ok")
        #expect(table.check(text, now: 2_000).label == "expired")
        #expect(table.check(Array(staged.text.utf8), now: 1_499).label == "not_yet_valid")
        #expect(table.check(Array(staged.text.utf8), now: 1_500).label == "ok")
        #expect(table.check(Array(APIKey.generate().text.utf8), now: 1_000) == .unknown)
        #expect(table.check(Array("tgk_short".utf8), now: 1_000).label == "malformed")
        #expect(table.check(Array("Bearer abc".utf8), now: 1_000).label == "malformed")
    }

    @Test func tenThousandKeysAreOneLookupEach() {
        let keys = (0..<10_000).map { _ in APIKey.generate() }
        let table = APIKeyTable(keys.enumerated().map { Self.entry($1, id: "k_\($0)") })
        for i in [0, 4_999, 9_999] {
            guard case .valid(let e) = table.check(Array(keys[i].text.utf8), now: 0) else {
                Issue.record("key \(i) not found")
                continue
            }
            #expect(e.id == "k_\(i)")
        }
    }

    @Test func theFileReadsBackWhatItWrote() throws {
        let entries = [
            Self.entry(APIKey.generate(), expires: 1_814_313_600),
            APIKeyEntry(
                id: "k-2", digest: APIKey.generate().digest, sub: "ci \"job\" #1", clientID: nil, scopes: [],
                claims: [("teams", .array([.string("a"), .string("b: c")])), ("one", .array([.string("x")]))],
                expires: nil, notBefore: 1_800_000_000)
        ]
        let text = APIKeyFile.render(entries)
        #expect(try APIKeyFile.parse(text).get() == entries)
        #expect(!text.contains("tgk_"))
        #expect(try APIKeyFile.parse("").get().isEmpty)
    }

    static let digestA = "sha256:" + String(repeating: "0a", count: 32)
    static let digestB = "sha256:" + String(repeating: "0b", count: 32)

    func problems(_ text: String) -> [APIKeyFileProblem] {
        if case .failure(let p) = APIKeyFile.parse(text) { return p.all }
        return []
    }

    @Test func aBrokenFileSaysWhereWithItsLine() {
        let good = "- id: k_1\n  digest: \(Self.digestA)\n  sub: a\n"
        #expect(problems(good).isEmpty)
        #expect(problems("id: k_1\n").map(\.line) == [1])
        let cases: [(String, Int, String)] = [
            (good + "  colour: red\n", 4, "unknown field colour"),
            ("- id: k_1\n  digest: \(Self.digestA)\n", 1, "sub is missing"),
            ("- id: k_1\n  sub: a\n  digest: sha256:abc\n", 3, "digest must be"),
            (good + "  expires: tomorrow\n", 4, "RFC 3339"),
            (good + "  expires: 2027-02-30T00:00:00Z\n", 4, "RFC 3339"),
            (good + "- id: k_1\n  digest: \(Self.digestB)\n  sub: b\n", 4, "also the id of the entry on line 1"),
            (good + "- id: k_2\n  digest: \(Self.digestA)\n  sub: b\n", 4, "same digest as key k_1"),
            (good + "  claims: { sub: other }\n", 4, "claims.sub is not a claim a key may set"),
            ("- id: \"k 1\"\n  digest: \(Self.digestA)\n  sub: a\n", 1, "id must be"),
            (good + "  scopes: { a: b }\n", 4, "scopes must be a string or a list"),
            (good + "  scopes: [\"a b\"]\n", 4, "is not a scope-token")
        ]
        for (text, line, message) in cases {
            let found = problems(text)
            #expect(found.count == 1 && found.first?.line == line, "\(message): \(found)")
            #expect(found.first?.message.contains(message) == true, "\(message): \(found)")
        }
        #expect(problems("- [unclosed\n").first?.line == nil)
    }

    @Test func rfc3339TimesAndOffsets() {
        #expect(RFC3339.seconds("2027-06-30T00:00:00Z") == 1_814_313_600)
        #expect(RFC3339.seconds("2027-06-30T02:00:00+02:00") == 1_814_313_600)
        #expect(RFC3339.seconds("2027-06-29T23:30:00.25-00:30") == 1_814_313_600)
        #expect(RFC3339.text(1_814_313_600) == "2027-06-30T00:00:00Z")
        for bad in ["2027-06-30", "2027-06-30T00:00:00", "2027-13-01T00:00:00Z", "2027-06-30T00:00:00+2:00", "x"] {
            #expect(RFC3339.seconds(bad) == nil, "\(bad)")
        }
    }

    /// Every time that reads is written back as one that reads to the same second (LoginFuzz
    /// found `0360-01-01` written as `360-01-01`): years before 1000 keep four digits, and an
    /// offset that carries a time out of 0000–9999 is refused.
    @Test func rfc3339YearsKeepFourDigitsAndStayInRange() {
        for text in ["0360-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "0999-12-31T23:59:59Z"] {
            let t = RFC3339.seconds(text)
            #expect(t != nil && RFC3339.text(t!) == text, "\(text)")
        }
        #expect(RFC3339.seconds("0000-01-01T00:00:00Z") == RFC3339.firstSecond)
        #expect(RFC3339.seconds("9999-12-31T23:59:59-00:01") == nil)
        #expect(RFC3339.seconds("0000-01-01T00:00:00+00:01") == nil)
    }

    @Test func createRevokeAndRotate() throws {
        let identity = APIKeyEditing.Identity(
            sub: "partner", clientID: "sync", scopes: ["a"], claims: [("org", .string("x"))])
        let made = try APIKeyEditing.create(identity, id: "k_one", expires: 5_000, in: [])
        #expect(made.entries.count == 1)
        #expect(APIKeyTable(made.entries).check(Array(made.key.utf8), now: 1).label == "ok")
        #expect(throws: APIKeyEditing.Failure.self) {
            try APIKeyEditing.create(identity, id: "k_one", in: made.entries)
        }
        #expect(throws: APIKeyEditing.Failure.self) {
            try APIKeyEditing.create(identity, expires: 10, notBefore: 10, in: [])
        }
        let rotated = try APIKeyEditing.rotate("k_one", oldExpires: 100, in: made.entries)
        let table = APIKeyTable(rotated.entries)
        #expect(table.check(Array(made.key.utf8), now: 99).label == "ok")
        #expect(table.check(Array(made.key.utf8), now: 100).label == "expired")
        guard case .valid(let new) = table.check(Array(rotated.key.utf8), now: 100) else {
            Issue.record("the rotated key does not pass")
            return
        }
        #expect(new.id == rotated.id && new.sub == "partner" && new.clientID == "sync" && new.scopes == ["a"])
        let revoked = try APIKeyEditing.revoke("k_one", in: rotated.entries)
        #expect(APIKeyTable(revoked).check(Array(made.key.utf8), now: 1) == .unknown)
        #expect(throws: APIKeyEditing.Failure.self) { try APIKeyEditing.revoke("k_one", in: revoked) }
    }
}
