public import JOSE
import Yams

/// One key's entry in a key file: its public id, the digest of the key (never the key), and
/// the identity a token's claims would give its caller.
public struct APIKeyEntry: Equatable, Sendable {
    /// Public: shown in logs, on the status page and by `tokengate api-keys list`.
    public var id: String
    var digest: APIKeyDigest
    public var sub: String
    public var clientID: String?
    public var scopes: [String]
    /// More claims, each a string or a list of strings (as written: `equals` in a `require`
    /// reads a string, `contains` a list), for `require`, identity headers, policy and rate
    /// limits.
    public var claims: [(String, JSONValue)]
    /// Unix seconds: the key fails from this second on (no leeway).
    public var expires: Int64?
    /// Unix seconds: the key fails before this second (a new key staged ahead of its use).
    public var notBefore: Int64?
    /// The claims its caller is admitted with (`tokenClaims(set:)`), made once when its set's
    /// table is built rather than on every request; nil outside a table.
    var admittedClaims: JSONObject?

    public static func == (a: APIKeyEntry, b: APIKeyEntry) -> Bool {
        a.id == b.id && a.digest == b.digest && a.sub == b.sub && a.clientID == b.clientID && a.scopes == b.scopes
            && a.claims.map(\.0) == b.claims.map(\.0) && a.claims.map(\.1) == b.claims.map(\.1)
            && a.expires == b.expires && a.notBefore == b.notBefore
    }
}

/// A key file's problem, with the line it is on when there is one.
public struct APIKeyFileProblem: Error, Equatable, CustomStringConvertible {
    public let line: Int?
    public let message: String

    public var description: String { line.map { "line \($0): \(message)" } ?? message }
}

/// The key file (`api_keys.<set>.file`): a YAML list of entries, written by `tokengate
/// api-keys` and read again whenever it changes. Strict: an unknown key, a missing field, a
/// malformed digest or date, or two entries with one id or one digest is a problem with its
/// line, and a file with any problem is not used at all (the last good one stays).
public enum APIKeyFile {
    /// Every problem a file has, not only its first.
    public struct Problems: Error, CustomStringConvertible {
        public let all: [APIKeyFileProblem]
        public var description: String { all.map(\.description).joined(separator: "\n") }
    }

    static let fields: Set<String> = ["id", "digest", "sub", "client_id", "scopes", "claims", "expires", "not_before"]

    public static func parse(_ text: String) -> Result<[APIKeyEntry], Problems> {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text, .basic)
        } catch {
            return .failure(Problems(all: [APIKeyFileProblem(line: nil, message: "not YAML: \(error)")]))
        }
        guard let root else { return .success([]) }
        guard case .sequence(let list) = root else {
            return .failure(Problems(all: [problem(root, "the file must be a list of keys (- id: …)")]))
        }
        var problems: [APIKeyFileProblem] = []
        var entries: [APIKeyEntry] = []
        var ids: [String: Int] = [:]
        var digests: [APIKeyDigest: String] = [:]
        for node in list {
            switch entry(node) {
            case .failure(let found): problems += found.all
            case .success(let e):
                if let first = ids[e.id] {
                    problems.append(problem(node, "id \(e.id) is also the id of the entry on line \(first)"))
                } else if let other = digests[e.digest] {
                    problems.append(problem(node, "key \(e.id) has the same digest as key \(other)"))
                }
                ids[e.id] = ids[e.id] ?? node.mark?.line ?? 0
                digests[e.digest] = digests[e.digest] ?? e.id
                entries.append(e)
            }
        }
        return problems.isEmpty ? .success(entries) : .failure(Problems(all: problems))
    }

    static func problem(_ node: Node?, _ message: String) -> APIKeyFileProblem {
        APIKeyFileProblem(line: node?.mark?.line, message: message)
    }

    private static func entry(_ node: Node) -> Result<APIKeyEntry, Problems> {
        guard case .mapping(let map) = node else {
            return .failure(Problems(all: [problem(node, "an entry must be a mapping")]))
        }
        var problems: [APIKeyFileProblem] = []
        var fieldsByName: [String: Node] = [:]
        for (k, v) in map {
            guard let name = k.scalar?.string, fields.contains(name) else {
                problems.append(
                    problem(
                        k,
                        "unknown field \(k.scalar?.string ?? "?") (known: \(fields.sorted().joined(separator: ", ")))"))
                continue
            }
            fieldsByName[name] = v
        }
        func string(_ name: String, required: Bool) -> String? {
            guard let v = fieldsByName[name] else {
                if required { problems.append(problem(node, "\(name) is missing")) }
                return nil
            }
            guard let s = v.scalar?.string, !s.isEmpty else {
                problems.append(problem(v, "\(name) must be a non-empty string"))
                return nil
            }
            return s
        }
        func strings(_ v: Node, _ name: String) -> JSONValue? {
            if let s = v.scalar?.string { return .string(s) }
            guard case .sequence(let items) = v, items.allSatisfy({ $0.scalar != nil }) else {
                problems.append(problem(v, "\(name) must be a string or a list of strings"))
                return nil
            }
            return .array(items.compactMap { $0.scalar?.string }.map(JSONValue.string))
        }
        func date(_ name: String) -> Int64? {
            guard let text = string(name, required: false) else { return nil }
            guard let t = RFC3339.seconds(text) else {
                problems.append(problem(fieldsByName[name], "\(name) must be an RFC 3339 time (2027-06-30T00:00:00Z)"))
                return nil
            }
            return t
        }
        let id = string("id", required: true)
        if let id, !APIKeyEntry.isValidID(id) {
            problems.append(problem(fieldsByName["id"], "id must be 1 to 64 of A-Z a-z 0-9 _ -"))
        }
        let digestText = string("digest", required: true)
        let digest = digestText.flatMap(APIKeyDigest.init)
        if digestText != nil, digest == nil {
            problems.append(problem(fieldsByName["digest"], "digest must be sha256: and 64 hex digits"))
        }
        let sub = string("sub", required: true)
        let clientID = string("client_id", required: false)
        var scopes: [String] = []
        if let node = fieldsByName["scopes"], let value = strings(node, "scopes") {
            scopes = value.array?.compactMap(\.string) ?? value.string.map { [$0] } ?? []
            if let bad = scopes.first(where: { !APIKeyEntry.isScopeToken($0) }) {
                problems.append(
                    problem(node, "scope \"\(bad)\" is not a scope-token (RFC 6749 §3.3: no space, quote or backslash)")
                )
            }
        }
        var claims: [(String, JSONValue)] = []
        if let c = fieldsByName["claims"] {
            if case .mapping(let map) = c {
                for (k, v) in map {
                    guard let name = k.scalar?.string, !name.isEmpty else {
                        problems.append(problem(k, "a claim's name must be a string"))
                        continue
                    }
                    if ["sub", "client_id", "scope", "iss", "aud", "exp", "nbf", "iat", "cnf", "acr"].contains(name) {
                        problems.append(problem(k, "claims.\(name) is not a claim a key may set"))
                        continue
                    }
                    if let values = strings(v, "claims.\(name)") { claims.append((name, values)) }
                }
            } else {
                problems.append(problem(c, "claims must be a mapping of names to strings or lists of strings"))
            }
        }
        let expires = date("expires")
        let notBefore = date("not_before")
        guard problems.isEmpty, let id, let digest, let sub else { return .failure(Problems(all: problems)) }
        return .success(
            APIKeyEntry(
                id: id, digest: digest, sub: sub, clientID: clientID, scopes: scopes, claims: claims, expires: expires,
                notBefore: notBefore))
    }

    /// The file's text for `entries`, as `parse` reads it back.
    public static func render(_ entries: [APIKeyEntry]) -> String {
        var out = "# API keys (tokengate api-keys): digests only, never a key.\n"
        for e in entries {
            out += "- id: \(quoted(e.id))\n  digest: \(e.digest)\n  sub: \(quoted(e.sub))\n"
            if let c = e.clientID { out += "  client_id: \(quoted(c))\n" }
            if !e.scopes.isEmpty { out += "  scopes: [\(e.scopes.map(quoted).joined(separator: ", "))]\n" }
            if !e.claims.isEmpty {
                out += "  claims:\n"
                for (name, value) in e.claims {
                    let items = value.array?.compactMap(\.string) ?? []
                    let text = value.string.map(quoted) ?? "[\(items.map(quoted).joined(separator: ", "))]"
                    out += "    \(quoted(name)): \(text)\n"
                }
            }
            if let t = e.expires { out += "  expires: \(RFC3339.text(t))\n" }
            if let t = e.notBefore { out += "  not_before: \(RFC3339.text(t))\n" }
        }
        return out
    }

    /// An RFC 3339 time as Unix seconds, for the command's options.
    public static func time(_ text: String) -> Int64? { RFC3339.seconds(text) }

    /// Unix seconds as RFC 3339 (UTC).
    public static func text(_ seconds: Int64) -> String { RFC3339.text(seconds) }

    /// A YAML double-quoted scalar: any text reads back as itself.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20 || u.value == 0x7F:
                out += "\\x" + String(u.value >> 4, radix: 16) + String(u.value & 0xF, radix: 16)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}

extension APIKeyEntry {
    /// A public id: what logs, metrics labels and the status page show of a key.
    static func isValidID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        return (1...64).contains(bytes.count)
            && bytes.allSatisfy { Base62.isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// A scope-token (RFC 6749 §3.3): %x21 / %x23-5B / %x5D-7E, at least one.
    public static func isScopeToken(_ scope: String) -> Bool {
        !scope.isEmpty
            && scope.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }

    /// A new entry's id: `k_` and 8 random base62 digits.
    static func newID() -> String {
        "k_" + String(Base62.encode(SecureRandom.bytes(6), digits: 9).suffix(8))
    }
}
