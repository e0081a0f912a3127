import Testing

@testable import JOSE

/// `JSONPicker` reads without building a tree, so it must accept exactly the texts
/// `JSONParser` accepts, and what it picks must be what the parsed tree holds at the same
/// path. Every input of the parser's own differential tests goes through both.
@Suite("JSON: the picker against the parser")
struct JSONPickerDifferentialTests {
    /// Paths tried on every text: short and long names, names equal to others only by
    /// canonical equivalence, names the random documents use, paths through arrays' siblings.
    static let fixedPaths: [[String]] = [
        ["iss"], ["a"], ["a", "a"], ["a", "a", "a"], [""], ["\u{0000}"], ["é"], ["K"], ["\u{212A}"],
        ["abcdefgh"], ["abcdefghijklmnop"], ["preferred_username"], ["cnf", "jkt"], ["sub", "iss"], ["keys"]
    ]
    static let fixed = JSONPicker(paths: fixedPaths)

    /// What the tree holds at `path`, in the picker's terms.
    static func expected(_ tree: JSONValue, _ path: [String]) -> JSONPicker.Picked? {
        var at = tree
        for name in path {
            guard let next = at.object?[name] else { return nil }
            at = next
        }
        switch at {
        case .string(let s): return .string(s)
        case .number(let n): return .number(n)
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .object: return .object
        case .array: return .array
        }
    }

    /// Up to `limit` paths that lead somewhere in `tree`, breadth first.
    static func presentPaths(_ tree: JSONValue, limit: Int) -> [[String]] {
        var out: [[String]] = []
        var queue: [([String], JSONObject)] = []
        if let top = tree.object { queue.append(([], top)) }
        while !queue.isEmpty && out.count < limit {
            let (prefix, object) = queue.removeFirst()
            for name in object.names where out.count < limit {
                out.append(prefix + [name])
                if let inner = object[name]?.object { queue.append((prefix + [name], inner)) }
            }
        }
        return out
    }

    static func compare(_ bytes: [UInt8], _ what: @autoclosure () -> String) {
        let tree = try? JSONParser.parse(bytes)
        let reading = try? fixed.read(bytes)
        switch (tree, reading) {
        case (nil, nil): return
        case (nil, .some): Issue.record("\(what()): picked, the parser refused")
        case (.some, nil): Issue.record("\(what()): refused, the parser accepted")
        case (let tree?, let reading?):
            if reading.top != expected(tree, []) { Issue.record("\(what()): the top-level value differs") }
            for (k, path) in fixedPaths.enumerated() where reading.values[k] != expected(tree, path) {
                Issue.record(
                    "\(what()): \(path) is \(String(describing: reading.values[k])), the tree has it otherwise")
            }
            let present = presentPaths(tree, limit: 40)
            guard !present.isEmpty else { return }
            guard let own = try? JSONPicker(paths: present).read(bytes) else {
                Issue.record("\(what()): refused when picking its own members")
                return
            }
            for (k, path) in present.enumerated() where own.values[k] != expected(tree, path) {
                Issue.record("\(what()): its member \(path) is picked otherwise")
            }
        }
    }

    @Test func edgeCases() {
        for (i, text) in JSONDifferentialTests.edgeCases.enumerated() {
            Self.compare(Array(text.utf8), "edge case \(i): \(text)")
        }
        for bad: [UInt8] in [
            [0x22, 0xff, 0x22], [0x22, 0xc3, 0x22], [0x22, 0xc3, 0xa9, 0x22], [0xef, 0xbb, 0xbf, 0x7b, 0x7d],
            [0x22, 0xed, 0xa0, 0x80, 0x22], [0x22, 0x5c, 0x6e, 0xff, 0x22], [0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d],
            Array("{\"a\":\"".utf8) + [0xf4, 0x90, 0x80, 0x80] + Array("\"}".utf8),
            Array("{\"a\":[\"".utf8) + [0xe2, 0x82] + Array("\"]}".utf8),
            Array("{\"a\":\"".utf8) + [0xf0, 0x9f, 0x98, 0x80] + Array("\"}".utf8)
        ] {
            Self.compare(bad, "bytes \(bad)")
        }
    }

    @Test func fuzzCorpusFixturesAndRandomDocuments() {
        for (i, file) in DifferentialInputs.fuzzCorpus().enumerated() { Self.compare(file, "corpus file \(i)") }
        for (i, file) in DifferentialInputs.fixtureFiles().enumerated() { Self.compare(file, "fixture \(i)") }
        for (i, doc) in DifferentialInputs.randomJSON(count: 6_000, seed: 19).enumerated() {
            Self.compare(doc, "random input \(i): \(String(decoding: doc, as: UTF8.self))")
        }
    }

    /// Duplicates on either side of the size where both switch to hashing names, at the top
    /// and inside an object a path leads through.
    @Test(arguments: [
        JSONObject.indexedFrom - 2, JSONObject.indexedFrom - 1, JSONObject.indexedFrom, JSONObject.indexedFrom + 1, 300
    ])
    func duplicatesAroundTheIndexSize(members: Int) {
        let names = (0..<members).map { "member\($0)" }
        for dup in [0, members / 2, members - 1] {
            let body = (names + [names[dup]]).map { "\"\($0)\":1" }.joined(separator: ",")
            Self.compare(Array("{\(body)}".utf8), "\(members) members and a repeat of member \(dup)")
            Self.compare(Array("{\"a\":{\(body)},\"b\":2}".utf8), "the same inside a picked member")
            let picker = JSONPicker(paths: [["a", names[dup]]])
            #expect(throws: JOSEError.self) { try picker.read(Array("{\"a\":{\(body)}}".utf8)) }
        }
        let wide = "{\"a\":{" + names.map { "\"\($0)\":{\"x\":1}" }.joined(separator: ",") + "},\"x\":1}"
        Self.compare(Array(wide.utf8), "\(members) objects, each with a member named as one outside")
    }

    /// The names of all open objects share one stack of `JSONPicker.seenCapacity`; an object
    /// that finds it full keeps its names in a set. Nested objects of 30 names each fill it
    /// at the third level: a repeat is refused on each side of that point, at each level,
    /// and names alike across levels are no repeat.
    @Test(arguments: [0, 1, 2, 3])
    func duplicatesWhenTheNameStackIsFull(level: Int) {
        let perLevel = 30
        #expect(JSONPicker.seenCapacity < 3 * perLevel)
        /// Four objects, each inside the last; `repeating` names the level that has one name
        /// twice, and which one (its first, or its last, after the stack filled).
        func text(repeating: (level: Int, name: Int)?) -> [UInt8] {
            var inner = ""
            for depth in (0..<4).reversed() {
                var members = (0..<perLevel).map { "\"m\($0)\":\($0)" }
                if let repeating, repeating.level == depth { members.append("\"m\(repeating.name)\":0") }
                if !inner.isEmpty { members.append("\"next\":" + inner) }
                inner = "{" + members.joined(separator: ",") + "}"
            }
            return Array(inner.utf8)
        }
        Self.compare(text(repeating: nil), "four levels of \(perLevel) names, alike across levels")
        #expect((try? Self.fixed.read(text(repeating: nil))) != nil)
        for name in [0, perLevel - 1] {
            Self.compare(text(repeating: (level, name)), "m\(name) twice at level \(level)")
            #expect(throws: JOSEError.self) { try Self.fixed.read(text(repeating: (level, name))) }
        }
    }

    /// Names are sorted by their length (up to 63, then one bucket) and first byte before a
    /// compare: names that share both, and long names that differ only at the end, are still
    /// told apart; a long name in the bucket is compared whole.
    @Test func namesSharingALengthAndAFirstByte() throws {
        let long = (62...66).map { String(repeating: "n", count: $0 - 1) + "x" }
        let members = long + ["ab", "ac", "ba", String(repeating: "n", count: 70)]
        let text = "{" + members.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
        let paths = (long + ["ac", "bb", String(repeating: "n", count: 64) + "y"]).map { [$0] }
        let reading = try JSONPicker(paths: paths).read(Array(text.utf8))
        #expect(
            reading.values == [
                .number("0"), .number("1"), .number("2"), .number("3"), .number("4"), .number("6"), nil, nil
            ])
        Self.compare(Array(text.utf8), "long and alike names")
    }

    /// Strings are scanned eight bytes at a time: a byte that ends or marks a run (a quote,
    /// a backslash, a control character, a byte past ASCII) and its neighbours (`#` after a
    /// quote, `]` after a backslash, space after the controls) at every place in a word,
    /// in strings of every length around a word's.
    @Test func stringsAcrossEveryWordBoundary() throws {
        let marks: [[UInt8]] = [
            Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\n"#.utf8), [0x01], [0x1F], [0x00], [0x20], [0x21], [0x23],
            [0x5B], [0x5D], [0x7F], [0xC3, 0xA9], [0xF0, 0x9F, 0x98, 0x80], [0xC3]
        ]
        for length in 0...19 {
            for at in 0...length {
                for mark in marks {
                    let text = [UInt8](repeating: 0x61, count: at) + mark + [UInt8](repeating: 0x62, count: length - at)
                    let body = Array(#"{"k":""#.utf8) + text + Array(#"","z":1}"#.utf8)
                    Self.compare(body, "\(mark) at \(at) of \(length)")
                    let parsed = try? JSONParser.parse(body)
                    let wellFormed = mark.first.map { $0 >= 0x20 || $0 == 0x5C } ?? false && mark != [0xC3]
                    #expect((parsed != nil) == wellFormed, "\(mark) at \(at) of \(length)")
                    if wellFormed, mark.first != 0x5C {
                        #expect(parsed?.object?["k"] == .string(String(decoding: text, as: UTF8.self)))
                    }
                }
            }
        }
    }

    @Test func picksWhatItIsAskedForAndNothingElse() throws {
        let text =
            #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy","arguments":{"name":"x"},"#
            + #""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        let picker = JSONPicker(paths: [
            ["method"], ["id"], ["params", "name"], ["params", "_meta", "io.modelcontextprotocol/protocolVersion"],
            ["params"], ["name"], ["params", "arguments", "missing"]
        ])
        let reading = try picker.read(Array(text.utf8))
        #expect(reading.top == .object)
        #expect(
            reading.values == [
                .string("tools/call"), .number("7"), .string("deploy"), .string("2026-07-28"), .object, nil, nil
            ])
    }
}
