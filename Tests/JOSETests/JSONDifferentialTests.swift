import Foundation
import Testing

@testable import JOSE

/// The JSON parser and object type were rewritten for speed (members in an array, names
/// compared by a packed tag, one table look-up a string byte). They must accept and refuse
/// exactly what the old ones did, with the same values, member order and error text: every
/// input here goes through both (`RefJSON` is the old code, verbatim).
@Suite("JSON: the rewrite against the old parser")
struct JSONDifferentialTests {
    /// The old parser's value, in the new types (member order kept).
    static func converted(_ v: RefJSONValue) -> JSONValue {
        switch v {
        case .object(let o):
            var out = JSONObject()
            for name in o.names { out[name] = converted(o[name]!) }
            return .object(out)
        case .array(let a): return .array(a.map(converted))
        case .string(let s): return .string(s)
        case .number(let n): return .number(n)
        case .bool(let b): return .bool(b)
        case .null: return .null
        }
    }

    /// An error's text, as the outcome of a parse.
    struct Refusal: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// Parses `bytes` with both; records a difference in outcome, value or error text.
    /// Returns whether the old parser accepted it.
    @discardableResult
    static func compare(_ bytes: [UInt8], _ what: @autoclosure () -> String) -> Bool {
        let new: Result<JSONValue, Refusal>
        let old: Result<RefJSONValue, Refusal>
        do { new = .success(try JSONParser.parse(bytes)) } catch { new = .failure(Refusal(description: "\(error)")) }
        do { old = .success(try RefJSONParser.parse(bytes)) } catch { old = .failure(Refusal(description: "\(error)")) }
        switch (new, old) {
        case (.success(let n), .success(let o)):
            let want = converted(o)
            if n != want { Issue.record("\(what()): values differ\n new \(n)\n old \(want)") }
            checkLookups(n, o, what())
        case (.failure(let n), .failure(let o)):
            if n != o { Issue.record("\(what()): errors differ\n new \(n)\n old \(o)") }
        case (.success, .failure(let o)): Issue.record("\(what()): accepted, the old parser refused: \(o)")
        case (.failure(let n), .success): Issue.record("\(what()): refused (\(n)), the old parser accepted")
        }
        if case .success = old { return true }
        return false
    }

    /// Every member found by name (also as a prepared `Name`), near-miss names not found,
    /// and every number read as the old `int64` and `double` read it.
    static func checkLookups(_ new: JSONValue, _ old: RefJSONValue, _ what: String) {
        switch (new, old) {
        case (.object(let n), .object(let o)):
            #expect(n.names == o.names, "\(what)")
            for name in o.names {
                let want = converted(o[name]!)
                if n[name] != want || n[JSONObject.Name(name)] != want {
                    Issue.record("\(what): member \(name.debugDescription) not found as the old parser had it")
                }
                checkLookups(n[name]!, o[name]!, what)
                for miss in [name + "x", String(name.dropLast()), "x" + name, name.uppercased()]
                where o[miss] == nil && n[miss] != nil {
                    Issue.record("\(what): \(miss.debugDescription) found, not a member")
                }
            }
            // Names equal to others only by canonical equivalence.
            for probe in [
                "K", "\u{212A}", "é", "e\u{301}", "Å", "\u{212B}", ";", "\u{37E}", "preferred_username",
                "abcdefghijklmnop", "abcdefghijklmno", "\u{212A}abcdefghijklmnop"
            ]
            where n[probe] != o[probe].map(converted) {
                Issue.record("\(what): \(probe.debugDescription) looked up differently")
            }
        case (.array(let n), .array(let o)):
            for (a, b) in zip(n, o) { checkLookups(a, b, what) }
        case (.number, .number):
            if new.int64 != old.int64 || new.double != old.double { Issue.record("\(what): \(new) reads differently") }
        default: break
        }
    }

    @Test func fuzzCorpusAndItsSegments() {
        let corpus = DifferentialInputs.fuzzCorpus()
        #expect(corpus.count >= 100)
        for (i, file) in corpus.enumerated() {
            Self.compare(file, "corpus file \(i)")
            for (k, segment) in DifferentialInputs.segments(file).enumerated() {
                if let decoded = RefBase64URL.decode(String(decoding: segment, as: UTF8.self)) {
                    Self.compare(decoded, "corpus file \(i), segment \(k) decoded")
                }
            }
        }
    }

    @Test func fixturesAndTheTokensInThem() {
        let files = DifferentialInputs.fixtureFiles()
        #expect(files.count >= 30)
        for (i, file) in files.enumerated() {
            Self.compare(file, "fixture \(i)")
            for run in DifferentialInputs.quotedRuns(file) {
                for segment in DifferentialInputs.segments(run) {
                    if segment.count >= 4, let decoded = RefBase64URL.decode(String(decoding: segment, as: UTF8.self)) {
                        Self.compare(decoded, "fixture \(i), a decoded string")
                    }
                }
            }
        }
    }

    static let edgeCases: [String] = [
        "", " ", "{", "}", "{}", "[]", "{ }", "[ ]", "{}x", "{} ", " {} ", "{,}", "{\"a\":1,}", "[1,]", "[,1]",
        "{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{a:1}", "{'a':1}", "{\"a\":1 \"b\":2}", "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"b\":{\"a\":1,\"a\":2}}", "{\"\":1,\"\":2}", "{\"\":1,\"\\u0000\":2}", "{\"a\":1,\"a\\u0000\":2}",
        "{\"K\":1,\"\\u212A\":2}", "{\"\\u212A\":1,\"K\":2}", "{\"\\u212B\":1,\"Å\":2}", "{\"\\u037E\":1,\";\":2}",
        "{\"\\u212A\":1,\"k\":2}", "{\"preferred_username\":1,\"K\":2}", "{\"K\":1,\"preferred_username\":2}",
        "{\"preferred_username\":1,\"\\u212A\":2,\"K\":3}", "{\"abcdefghijklmnop\":1,\"abcdefghijklmno\":2}",
        "{\"\\u212Aabcdefghijklmnop\":1,\"Kabcdefghijklmnop\":2}", "{\"abcdefg\":1,\"abcdefh\":2}",
        "{\"abcdefgh\":1,\"abcdefgi\":2}", "{\"abcdefgh\":1,\"abcdefgh\":2}",
        "{\"\\u0061\":1,\"a\":2}", "{\"\\/\":1,\"/\":2}", "{\"é\":1,\"\\u00e9\":2}", "{\"e\\u0301\":1,\"é\":2}",
        "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud83d\\ude00\"", "\"\\u00\"", "\"\\u00G0\"", "\"\\x\"",
        "\"\\", "\"abc", "\"a\u{1}b\"", "\"a\tb\"", "\"\u{7f}\"", "\"\\u0000\"", "\"日本\"", "\"😀\"",
        "01", "-01", "-", "1.", ".1", "1e", "1e+", "1E-5", "-0", "-0.0e-0", "1.5", "+1", "0x10", "NaN", "Infinity",
        "tru", "true", "truex", "nul", "null", "fals", "false", "[true,false,null]", "{\"a\":[{\"b\":[]}]}",
        String(repeating: "[", count: 32) + String(repeating: "]", count: 32),
        String(repeating: "[", count: 33) + String(repeating: "]", count: 33),
        String(repeating: "[", count: 34) + String(repeating: "]", count: 34),
        String(repeating: "{\"a\":", count: 33) + "1" + String(repeating: "}", count: 33),
        String(repeating: "{\"a\":", count: 32) + "1" + String(repeating: "}", count: 32)
    ]

    @Test func edgeCases() {
        for (i, text) in Self.edgeCases.enumerated() { Self.compare(Array(text.utf8), "edge case \(i): \(text)") }
        // Raw bytes that are not UTF-8, in strings and outside.
        for bad: [UInt8] in [
            [0x22, 0xff, 0x22], [0x22, 0xc3, 0x22], [0x22, 0xc3, 0xa9, 0x22], [0xef, 0xbb, 0xbf, 0x7b, 0x7d],
            [0x22, 0xed, 0xa0, 0x80, 0x22], [0x22, 0x5c, 0x6e, 0xff, 0x22], [0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]
        ] {
            Self.compare(bad, "bytes \(bad)")
        }
    }

    /// Objects around the size where lookups switch to an index: every member found,
    /// duplicates caught on either side of it.
    @Test(arguments: [
        JSONObject.indexedFrom - 2, JSONObject.indexedFrom - 1, JSONObject.indexedFrom, JSONObject.indexedFrom + 1, 300
    ])
    func objectsAroundTheIndexSize(members: Int) {
        let names = (0..<members).map { "member\($0)" }
        let doc = "{" + names.map { "\"\($0)\":\"\($0)\"" }.joined(separator: ",") + "}"
        Self.compare(Array(doc.utf8), "\(members) members")
        for dup in [0, members / 2, members - 1] {
            let withDup = "{" + (names + [names[dup]]).map { "\"\($0)\":1" }.joined(separator: ",") + "}"
            Self.compare(Array(withDup.utf8), "\(members) members and a repeat of member \(dup)")
        }
    }

    @Test func randomDocumentsAndDamagedCopies() {
        let docs = DifferentialInputs.randomJSON(count: 12_000, seed: 7)
        var accepted = 0
        for (i, doc) in docs.enumerated()
        where Self.compare(doc, "random input \(i): \(String(decoding: doc, as: UTF8.self))") {
            accepted += 1
        }
        // Both outcomes well represented: about half the inputs are undamaged documents.
        #expect(accepted * 4 > docs.count && accepted * 4 < docs.count * 3, "\(accepted) of \(docs.count) accepted")
    }

    /// Setting and removing members keeps the order and values the old object kept.
    @Test func editsKeepTheOldObjectsOrder() {
        var r = DifferentialInputs.Random(state: 11)
        for round in 0..<200 {
            var new = JSONObject()
            var old = RefJSONObject()
            for _ in 0..<r.below(80) {
                let name = "k" + String(r.below(40))
                let value: JSONValue? = r.chance(25) ? nil : .number(String(r.below(100)))
                new[name] = value
                old[name] = value.map { _ in RefJSONValue.number(value!.int64.map(String.init)!) }
                #expect(new.names == old.names, "round \(round)")
            }
            for name in old.names { #expect(new[name] == Self.converted(old[name]!)) }
            #expect(new.count == old.count)
        }
    }

    /// Objects are equal by their members in order, whatever lookup aids they built on the
    /// way (an index past 32 members, a name kept as a string) and then dropped.
    @Test func equalityIsByMembersAlone() {
        var edited = JSONObject()
        edited["a"] = .number("1")
        edited["a name longer than fifteen bytes"] = .number("2")
        for i in 0..<40 { edited["m\(i)"] = .number("0") }
        for i in 0..<40 { edited["m\(i)"] = nil }
        edited["a name longer than fifteen bytes"] = nil
        var plain = JSONObject()
        plain["a"] = .number("1")
        #expect(edited == plain)
        plain["b"] = .number("1")
        #expect(edited != plain)
        var reordered = JSONObject()
        reordered["b"] = .number("1")
        reordered["a"] = .number("1")
        #expect(reordered != plain)
    }
}
