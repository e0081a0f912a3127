import Foundation

/// Every vector file to run: the fixtures shipped with the tests, plus every file under
/// $TOKENGATE_EXTRA_VECTORS (same formats and layout). A file that cannot be read or
/// parsed there is a failure, not a skip.
enum VectorFiles {
    struct File {
        let name: String
        let json: [String: Any]?
        let loadError: String?
    }

    static func all() -> [File] {
        var roots: [URL] = []
        if let fixtures = Bundle.module.url(forResource: "Fixtures", withExtension: nil) { roots.append(fixtures) }
        if let extra = ProcessInfo.processInfo.environment["TOKENGATE_EXTRA_VECTORS"], !extra.isEmpty {
            roots.append(URL(fileURLWithPath: extra))
        }
        var out: [File] = []
        for root in roots {
            let prefix = root.lastPathComponent == "Fixtures" ? "fixtures" : "extra"
            guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else {
                out.append(File(name: "\(prefix):\(root.path)", json: nil, loadError: "cannot list the directory"))
                continue
            }
            for case let url as URL in walker where url.pathExtension == "json" {
                let rel = "\(prefix)/" + url.path.dropFirst(root.path.count + 1)
                guard let data = try? Data(contentsOf: url) else {
                    out.append(File(name: rel, json: nil, loadError: "unreadable"))
                    continue
                }
                guard let obj = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
                    out.append(File(name: rel, json: nil, loadError: "not a JSON object"))
                    continue
                }
                out.append(File(name: rel, json: obj, loadError: nil))
            }
        }
        return out.sorted { $0.name < $1.name }
    }
}

/// What running one file gave: cases run, cases whose expected result was met, and one
/// line per case that was not (with its id), so a failure says exactly which vector.
struct FileResult {
    var ran = 0
    var met = 0
    var misses: [String] = []
    /// Cases decided by a documented tokengate policy rather than upstream's label.
    var byPolicy = 0

    mutating func record(_ id: String, expected: Expectation, got: Bool, note: String = "") {
        ran += 1
        if expected.accepts(got) {
            met += 1
        } else {
            misses.append("\(id): expected \(expected), got \(got ? "valid" : "invalid") \(note)")
        }
    }
}

enum Expectation: CustomStringConvertible {
    case valid, invalid, either

    init(_ label: String?) {
        switch label {
        case "valid": self = .valid
        case "acceptable": self = .either
        default: self = .invalid
        }
    }

    func accepts(_ got: Bool) -> Bool {
        switch self {
        case .valid: return got
        case .invalid: return !got
        case .either: return true
        }
    }

    var description: String {
        switch self {
        case .valid: "valid"
        case .invalid: "invalid"
        case .either: "either"
        }
    }
}

extension Array where Element == UInt8 {
    init?(hex: String) {
        var out: [UInt8] = []
        out.reserveCapacity(hex.utf8.count / 2)
        var it = hex.utf8.makeIterator()
        while let a = it.next() {
            guard let b = it.next(), let hi = hexDigit(a), let lo = hexDigit(b) else { return nil }
            out.append(hi << 4 | lo)
        }
        self = out
    }
}

private func hexDigit(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x61...0x66: return c - 0x61 + 10
    case 0x41...0x46: return c - 0x41 + 10
    default: return nil
    }
}

func jsonText(_ obj: Any) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: obj), as: UTF8.self)
}
