import Foundation
import Yams

/// Walks a composed YAML tree with a key path, collecting problems instead of stopping at
/// the first: `check-config` and reload report everything at once.
final class ConfigReader {
    private(set) var problems: [ConfigProblem] = []
    let environment: [String: String]
    /// Directory of the config file: relative `*_file` paths are read from there.
    let baseDirectory: String

    /// The modules the config is read with (`ModuleCatalog`).
    let modules: ModuleCatalog
    /// Their stages' route keys: a route accepts them beside `RouteConfig.keyTable`'s.
    let stageKeys: ConfigKeyTable<RouteConfig, RouteKeyContext>
    /// The top-level keys: `GatewayConfig.keyTable`'s and the modules'.
    private let topKeys: [String]

    init(environment: [String: String], baseDirectory: String, modules: ModuleCatalog = .gateway) {
        self.environment = environment
        self.baseDirectory = baseDirectory
        self.modules = modules
        stageKeys = modules.routeKeys
        topKeys = GatewayConfig.keyTable.names + modules.topKeyDocs.map(\.name)
    }

    func problem(_ path: String, _ node: Node?, _ message: String) {
        problems.append(ConfigProblem(path: path, line: node?.mark.map { $0.line }, message: message))
    }

    /// A mapping's entries by key, reporting duplicate keys and keys `section` does not list.
    /// `section` nil: the config chooses the keys (names of issuers, headers, claims).
    func mapping(_ node: Node, path: String, section: ConfigSection?) -> [String: Node]? {
        var known = section == .top ? topKeys : section?.keys
        if section == .route, let k = known { known = k + stageKeys.names.filter { !k.contains($0) } }
        guard case .mapping(let map) = node else {
            problem(path, node, "must be a mapping (key: value)")
            return nil
        }
        var out: [String: Node] = [:]
        for (k, v) in map {
            guard let key = k.scalar?.string else {
                problem(path, k, "keys must be plain strings")
                continue
            }
            let child = path.isEmpty ? key : "\(path).\(key)"
            if out[key] != nil {
                problem(child, k, "is given twice; keep one")
                continue
            }
            if let known, !known.contains(key) {
                let hint = ConfigReader.closest(key, in: known).map { "did you mean \"\($0)\"? " } ?? ""
                problem(child, k, "is not a known key; \(hint)known keys: \(known.joined(separator: ", "))")
                continue
            }
            out[key] = v
        }
        return out
    }

    func sequence(_ node: Node, path: String) -> [Node]? {
        if case .sequence(let seq) = node { return Array(seq) }
        problem(path, node, "must be a list")
        return nil
    }

    /// A scalar as a string, with `${VAR}` / `${VAR:-default}` substituted from the
    /// environment (values only, after YAML parsing, so a variable cannot inject structure).
    func string(_ node: Node, path: String) -> String? {
        guard case .scalar(let scalar) = node else {
            problem(path, node, "must be a single value, not a list or mapping")
            return nil
        }
        return substitute(scalar.string, path: path, node: node)
    }

    func substitute(_ text: String, path: String, node: Node?) -> String? {
        guard text.contains("${") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            out += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                problem(path, node, "has an unclosed \"${\"")
                return nil
            }
            let expr = rest[start.upperBound..<end]
            let (name, fallback): (Substring, Substring?) = {
                if let r = expr.range(of: ":-") { return (expr[..<r.lowerBound], expr[r.upperBound...]) }
                return (expr, nil)
            }()
            if let value = environment[String(name)], !value.isEmpty {
                out += value
            } else if let fallback {
                out += fallback
            } else {
                problem(
                    path, node,
                    "environment variable \(name) is not set; export it or give a default as ${\(name):-value}")
                return nil
            }
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }

    func bool(_ node: Node, path: String) -> Bool? {
        guard let s = string(node, path: path) else { return nil }
        switch s.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            problem(path, node, "must be true or false")
            return nil
        }
    }

    func duration(_ node: Node, path: String) -> Double? {
        guard let s = string(node, path: path) else { return nil }
        guard let v = ConfigValues.duration(s) else {
            problem(path, node, "\"\(s)\" is not a duration; write e.g. 500ms, 2s, 5m, 1h, 30d (at most 10 years)")
            return nil
        }
        return v
    }

    func size(_ node: Node, path: String) -> Int? {
        guard let s = string(node, path: path) else { return nil }
        guard let v = ConfigValues.size(s) else {
            problem(path, node, "\"\(s)\" is not a size; write e.g. 512KB, 4MB")
            return nil
        }
        return v
    }

    /// A secret given inline (`key: value`) or as `key_file: path` (file contents, one
    /// trailing newline removed). Exactly one of the two.
    func secret(_ map: [String: Node], key: String, path: String) -> String? {
        secret(inline: map[key], file: map[key + "_file"], key: key, path: path)
    }

    /// The same, from the two keys' nodes as a section's draft kept them.
    func secret(inline: Node?, file: Node?, key: String, path: String) -> String? {
        if inline != nil && file != nil {
            problem("\(path).\(key)", inline, "give either \(key) or \(key)_file, not both")
            return nil
        }
        if let inline { return string(inline, path: "\(path).\(key)") }
        guard let file, let name = string(file, path: "\(path).\(key)_file") else { return nil }
        let full = name.hasPrefix("/") ? name : "\(baseDirectory)/\(name)"
        guard let data = FileManager.default.contents(atPath: full), var text = String(data: data, encoding: .utf8)
        else {
            problem("\(path).\(key)_file", file, "cannot read \(full)")
            return nil
        }
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// The known word nearest to `word` by edit distance, if it is close.
    static func closest(_ word: String, in candidates: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for i in 1...max(a.count, 1) where !a.isEmpty {
                var prev = row[0]
                row[0] = i
                for j in 1...max(b.count, 1) where !b.isEmpty {
                    let cur = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1))
                    prev = cur
                }
            }
            return row[b.count]
        }
        let w = Array(word)
        let best = candidates.map { ($0, distance(w, Array($0))) }.min { $0.1 < $1.1 }
        guard let best, best.1 <= max(2, word.count / 3) else { return nil }
        return best.0
    }
}
