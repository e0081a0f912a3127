import Foundation
import Testing

@testable import Gateway

/// docs/configuration.md is the configuration reference, and these tests keep it true: the
/// keys it documents and the keys the parser accepts (`ConfigSection`) must be the same set,
/// and each row's type and default must be those of its section's `ConfigKeyTable`.
///
/// A documented key is a row of a table whose header row starts with `| key |`; the row's
/// first cell is the key's full path in backticks, written as `ConfigSection` writes its
/// sections: `limits.max_body_size`, `upstreams.NAME.tls.ca_file`, `routes[].dpop.nonce`.
@Suite("Config: the reference in docs/configuration.md")
struct ConfigReferenceTests {
    static let referencePath = "docs/configuration.md"

    /// Every key path the parser accepts.
    static var parserKeys: Set<String> { Set(ConfigSection.allCases.flatMap(\.keyPaths)) }

    @Test func everyKeyTheParserAcceptsIsDocumented() throws {
        let documented = try Set(Self.documentedKeys().map(\.path))
        let missing = Self.parserKeys.subtracting(documented).sorted()
        #expect(
            missing.isEmpty,
            "the parser accepts keys \(Self.referencePath) does not document (add a row for each): \(missing.joined(separator: ", "))"
        )
    }

    @Test func everyDocumentedKeyIsOneTheParserAccepts() throws {
        let documented = try Self.documentedKeys()
        let unknown = documented.filter { !Self.parserKeys.contains($0.path) }
        #expect(
            unknown.isEmpty,
            "\(Self.referencePath) documents keys the parser does not accept (fix or remove the rows): \(unknown.map { "line \($0.line): \($0.path)" }.joined(separator: ", "))"
        )
    }

    @Test func eachKeyIsDocumentedOnceWithEveryColumnFilled() throws {
        let documented = try Self.documentedKeys()
        var seen: [String: Int] = [:]
        for key in documented {
            if let first = seen[key.path] {
                Issue.record("\(key.path) is documented twice: lines \(first) and \(key.line)")
            }
            seen[key.path] = key.line
            for (column, cell) in zip(Self.columns, key.cells) where cell.isEmpty {
                Issue.record("\(Self.referencePath) line \(key.line): \(key.path) has no \(column)")
            }
        }
    }

    /// The reference's row says what the key's table says: the same type and default text,
    /// and a default the model really has.
    @Test func eachTableKeysRowMatchesItsTable() throws {
        let documented = try Dictionary(Self.documentedKeys().map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        var checked = 0
        for section in ConfigSection.allCases {
            for key in section.keyDocs {
                let path = section.rawValue.isEmpty ? key.name : "\(section.rawValue).\(key.name)"
                guard let row = documented[path], row.cells.count >= 3 else { continue }  // reported above
                checked += 1
                #expect(
                    row.cells[1] == key.type,
                    "\(Self.referencePath) line \(row.line): \(path)'s type is \(row.cells[1]); its key table says \(key.type)"
                )
                #expect(
                    row.cells[2] == key.defaultText,
                    "\(Self.referencePath) line \(row.line): \(path)'s default is \(row.cells[2]); its key table says \(key.defaultText)"
                )
                if let check = key.defaultCheck {
                    #expect(
                        check(row.cells[2]),
                        "\(Self.referencePath) line \(row.line): \(path)'s default \(row.cells[2]) is not the model's default"
                    )
                }
            }
        }
        #expect(checked > 0)
    }

    /// The reference's table columns: what every key has.
    static let columns = ["key", "type", "default", "example", "check-config"]

    struct DocumentedKey {
        let path: String
        let line: Int
        let cells: [String]
    }

    /// The rows of every key table in the reference.
    static func documentedKeys() throws -> [DocumentedKey] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(referencePath), encoding: .utf8)
        var out: [DocumentedKey] = []
        var inKeyTable = false
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard line.hasPrefix("|") else {
                inKeyTable = false
                continue
            }
            let cells = tableCells(line)
            if !inKeyTable {
                if cells.first == "key" {
                    #expect(
                        cells == columns,
                        "\(referencePath) line \(index + 1): a key table's columns are \(columns.joined(separator: " | "))"
                    )
                    inKeyTable = true
                }
                continue
            }
            if cells.allSatisfy({ $0.allSatisfy { $0 == "-" || $0 == ":" } }) { continue }  // |---|---|
            let first = cells.first ?? ""
            guard first.count > 2, first.hasPrefix("`"), first.hasSuffix("`") else {
                Issue.record("\(referencePath) line \(index + 1): the first cell must be a key path in backticks")
                continue
            }
            out.append(DocumentedKey(path: String(first.dropFirst().dropLast()), line: index + 1, cells: cells))
        }
        return out
    }

    /// A table row's cells, trimmed; an escaped `\|` stays inside its cell.
    static func tableCells(_ line: Substring) -> [String] {
        var cells: [String] = []
        var cell = ""
        var escaped = false
        for ch in line.dropFirst() {
            if escaped {
                cell.append(ch)
                escaped = false
            } else if ch == "\\" {
                escaped = true
                cell.append(ch)
            } else if ch == "|" {
                cells.append(cell.trimmingCharacters(in: .whitespaces))
                cell = ""
            } else {
                cell.append(ch)
            }
        }
        return cells
    }
}

/// The repository's root directory (this file is Tests/GatewayTests/…).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
