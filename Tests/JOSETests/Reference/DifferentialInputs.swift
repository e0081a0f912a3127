import Foundation

@testable import JOSE

/// Inputs for the differential tests that hold a rewritten parser or decoder to the one it
/// replaced (`RefJSON`, `RefBase64URL`): the saved fuzz corpus, the fixtures, hand-picked
/// edge cases, and seeded random documents with random damage. Reproducible: one fixed seed.
enum DifferentialInputs {
    /// SplitMix64: a small deterministic generator, so a failing case can be replayed.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ a: [T]) -> T { a[below(a.count)] }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every file of the saved JOSE fuzz corpus.
    static func fuzzCorpus() -> [[UInt8]] {
        let dir = repositoryRoot.appendingPathComponent("fuzz/corpus")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().compactMap { try? Array(Data(contentsOf: dir.appendingPathComponent($0))) }
    }

    /// Every JSON fixture file of the JOSE tests, whole.
    static func fixtureFiles() -> [[UInt8]] {
        guard let root = Bundle.module.url(forResource: "Fixtures", withExtension: nil),
            let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        else { return [] }
        var out: [[UInt8]] = []
        for case let url as URL in walker where url.pathExtension == "json" {
            if let data = try? Data(contentsOf: url) { out.append(Array(data)) }
        }
        return out
    }

    /// The dot-separated pieces of `bytes` (a compact JWS splits into its three parts).
    static func segments(_ bytes: [UInt8]) -> [[UInt8]] {
        bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
    }

    /// Strings found inside JSON text, unescaped naively (enough to find base64url runs).
    static func quotedRuns(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var current: [UInt8]?
        for b in bytes {
            if b == UInt8(ascii: "\"") {
                if let c = current { out.append(c) }
                current = current == nil ? [] : nil
            } else {
                current?.append(b)
            }
        }
        return out
    }

    // MARK: random JSON

    static let names = [
        "iss", "sub", "aud", "exp", "nbf", "iat", "jti", "alg", "kid", "typ", "crit", "b64", "cnf", "jkt",
        "client_id", "client_idx", "scope", "a", "", "abcdefg", "abcdefgh", "abcdefgi", "\\u0000", "é", "a\\u0000",
        "x\\ny", "\\ud83d\\ude00", "preferred_username"
    ]

    static func randomName(_ r: inout Random) -> String {
        if r.chance(10) {
            // Long names that share their first bytes and length: the tag cannot tell them apart.
            let n = 7 + r.below(300)
            return String(repeating: "n", count: n - 1) + r.pick(["a", "b", "c"])
        }
        let name = r.pick(names)
        return r.chance(75) ? name + String(r.below(10000)) : name
    }

    static func randomString(_ r: inout Random) -> String {
        let pieces = [
            "a", "Z", "0", " ", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041", "\\u00e9",
            "\\ud83d\\ude00", "é", "日本", "😀", "https://idp.example.com/", "at+jwt", "\\uDBFF\\uDFFF"
        ]
        return (0..<r.below(8)).map { _ in r.pick(pieces) }.joined()
    }

    static func randomNumber(_ r: inout Random) -> String {
        r.pick([
            "0", "-0", "1", "-1", "1795595356", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "-9223372036854775809", "123456789012345678", "1234567890123456789", "1.5", "-1.5e3", "1E2", "1e+2",
            "1e-2", "0.0", "9.2e18", "9.3e18", "1e400", "12345678901234567890123", "3.999"
        ])
    }

    static func randomValue(_ r: inout Random, depth: Int) -> String {
        let ws = { (r: inout Random) -> String in r.chance(20) ? r.pick([" ", "\n", "\t", "\r", "  "]) : "" }
        switch depth > 3 ? r.below(4) : r.below(7) {
        case 0: return "\"" + randomString(&r) + "\""
        case 1: return randomNumber(&r)
        case 2: return r.pick(["true", "false", "null"])
        case 3: return "\"" + randomString(&r) + "\""
        case 4, 5: return randomObject(&r, depth: depth)
        default:
            let n = r.below(5)
            return "[" + (0..<n).map { _ in ws(&r) + randomValue(&r, depth: depth + 1) + ws(&r) }.joined(separator: ",")
                + "]"
        }
    }

    static func randomObject(_ r: inout Random, depth: Int) -> String {
        let ws = { (r: inout Random) -> String in r.chance(20) ? r.pick([" ", "\n", "\t", "\r", "  "]) : "" }
        // Now and then past `JSONObject.indexedFrom` members, where lookups switch to an index.
        let n = r.chance(10) ? 25 + r.below(20) : r.below(12)
        let members = (0..<n).map { _ in
            ws(&r) + "\"" + randomName(&r) + "\"" + ws(&r) + ":" + ws(&r) + randomValue(&r, depth: depth + 1) + ws(&r)
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// `bytes` with a few random changes: bytes dropped, inserted, replaced, a slice repeated,
    /// or the end cut off.
    static func damaged(_ bytes: [UInt8], _ r: inout Random) -> [UInt8] {
        var b = bytes
        let interesting: [UInt8] = Array("{}[]:,\"\\/ -+.eE0123456789tfnu".utf8) + [0x00, 0x1f, 0x7f, 0x80, 0xc3, 0xff]
        for _ in 0..<(1 + r.below(3)) {
            switch r.below(5) {
            case 0 where !b.isEmpty: b.remove(at: r.below(b.count))
            case 1: b.insert(r.pick(interesting), at: r.below(b.count + 1))
            case 2 where !b.isEmpty: b[r.below(b.count)] = r.chance(50) ? r.pick(interesting) : UInt8(r.below(256))
            case 3 where b.count > 2:
                let start = r.below(b.count - 1)
                let end = start + 1 + r.below(min(20, b.count - start - 1))
                b.insert(contentsOf: b[start..<end], at: end)
            default: if !b.isEmpty { b.removeLast(r.below(b.count) / 2 + 1) }
            }
        }
        return b
    }

    /// Random documents (mostly objects) and damaged copies of them.
    static func randomJSON(count: Int, seed: UInt64) -> [[UInt8]] {
        var r = Random(state: seed)
        var out: [[UInt8]] = []
        while out.count < count {
            let doc = Array((r.chance(80) ? randomObject(&r, depth: 0) : randomValue(&r, depth: 0)).utf8)
            out.append(doc)
            out.append(damaged(doc, &r))
        }
        return out
    }
}
