/// A route's `path_template:` — a path whose segments are literal text or variables, in the
/// spirit of RFC 6570's level-1 `{var}` (one segment) and of `{var*}` for the rest of the path:
///
/// - `{name}` matches one non-empty segment (no "/"); `{name*}`, only as the last segment,
///   matches one or more characters of the rest of the path, "/" included;
/// - a variable is a whole segment (`/files/{name}.json` is refused): segments are what the
///   router compares, and a segment is either fixed or free;
/// - names are `[A-Za-z0-9_]+`, each used once; literal segments are in the normal form
///   `PathNormalizer` gives (a request could never match any other);
/// - the template starts with "/", has no empty segment and no trailing "/": like `path:`, it
///   matches the path with or without one trailing "/" (a `{name*}` value keeps it).
///
/// Matching reads the normalized path, so what a variable captures is the segment as
/// `PathNormalizer` left it: escapes kept in uppercase hex (`a%20b`), unreserved ones decoded.
struct PathTemplate: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case variable(String)
        /// `{name*}`: the rest of the path.
        case rest(String)
    }

    /// The template as the config wrote it.
    let text: String
    let segments: [Segment]

    var description: String { text }

    /// How many segments are literal text: the first thing that ranks templates (`rank`).
    var literalCount: Int {
        segments.reduce(0) { n, s in if case .literal = s { return n + 1 } else { return n } }
    }
    var variableCount: Int { segments.count - literalCount }
    var hasRest: Bool {
        if case .rest = segments.last { return true }
        return false
    }
    /// The variables' names, in order.
    var names: [String] {
        segments.compactMap { s in
            switch s {
            case .literal: return nil
            case .variable(let n), .rest(let n): return n
            }
        }
    }

    /// What the template matches, whatever its variables are called: two templates of one
    /// shape match the same paths.
    var shape: [Segment] {
        segments.map { s in
            switch s {
            case .literal: return s
            case .variable: return .variable("")
            case .rest: return .rest("")
            }
        }
    }

    /// Higher is more specific, among templates: more literal segments first, then one without
    /// `{name*}`, then fewer variables. `Router` breaks a tie by a method list, then config order.
    var rank: [Int] { [literalCount, hasRest ? 0 : 1, -variableCount] }

    init(parsing text: String) throws(Refusal) {
        let b = Array(text.utf8)
        guard b.first == UInt8(ascii: "/") else { throw .notAbsolute }
        guard b.count > 1 else { throw .noVariable }
        // Braces first, over the whole text: a variable opens and closes within its segment.
        var open: Int?
        for (i, c) in b.enumerated() {
            switch c {
            case UInt8(ascii: "{"):
                if open != nil { throw .unclosedBrace }
                open = i
            case UInt8(ascii: "}"):
                if open == nil { throw .strayBrace }
                open = nil
            case UInt8(ascii: "/"):
                if open != nil { throw .unclosedBrace }
            default: break
            }
        }
        if open != nil { throw .unclosedBrace }
        let raw = b.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        var segments: [Segment] = []
        var seen: Set<String> = []
        for (k, piece) in raw.enumerated() {
            let s = String(decoding: piece, as: UTF8.self)
            if piece.isEmpty { throw k == raw.count - 1 && k > 0 ? .trailingSlash : .emptySegment }
            if let brace = piece.firstIndex(where: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") }) {
                guard brace == piece.startIndex, piece.last == UInt8(ascii: "}"),
                    piece.lazy.filter({ $0 == UInt8(ascii: "{") }).count == 1
                else { throw .partialSegment(s) }
                // By bytes: a String drops Characters, and "{" with a combining mark after it
                // is one Character (RouteFuzz's finding: "{\u{301}rsion}" read as "{rsion}").
                var name = String(decoding: piece.dropFirst().dropLast(), as: UTF8.self)
                let rest = name.hasSuffix("*")
                if rest { name.removeLast() }
                guard !name.isEmpty else { throw .emptyName }
                guard name.utf8.allSatisfy(Self.isNameByte) else { throw .badName(name) }
                guard seen.insert(name).inserted else { throw .repeatedName(name) }
                if rest && k != raw.count - 1 { throw .restNotLast(name) }
                segments.append(rest ? .rest(name) : .variable(name))
            } else {
                // The normal form of "/" + segment is itself: no dot-segment, no escape of an
                // unreserved byte, no lowercase hex, nothing the normalizer refuses.
                guard case .success(let n) = PathNormalizer.normalize(target: "/" + s), n.path == "/" + s,
                    n.query == nil
                else { throw .notNormal(s) }
                segments.append(.literal(s))
            }
        }
        guard segments.contains(where: { if case .literal = $0 { return false } else { return true } }) else {
            throw .noVariable
        }
        self.text = text
        self.segments = segments
    }

    static func == (a: Self, b: Self) -> Bool { a.text == b.text }
    func hash(into hasher: inout Hasher) { hasher.combine(text) }

    /// RFC 6570 §2.3 varname is ALPHA / DIGIT / "_" / pct-encoded, with "." between; the
    /// gateway keeps the part a header mapping and a log field can name without quoting.
    static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x5f
    }

    /// The variables' values when `path` (normalized) matches, in template order; nil when it
    /// does not. The plain reading of the rules above, one segment after another: `TemplateTable`
    /// finds the route, this reads what the chosen route's template captured.
    func parameters(in path: String) -> PathParameters? {
        let p = Array(path.utf8)
        let n = p.count
        var out: [PathParameters.Parameter] = []
        out.reserveCapacity(variableCount)
        // `pos`: the "/" before the next segment, or the end.
        var pos = 0
        for segment in segments {
            guard pos < n, p[pos] == UInt8(ascii: "/") else { return nil }
            let start = pos + 1
            if case .rest(let name) = segment {
                guard start < n else { return nil }
                out.append(.init(name: name, value: String(decoding: p[start...], as: UTF8.self)))
                return PathParameters(out)
            }
            var end = start
            while end < n && p[end] != UInt8(ascii: "/") { end += 1 }
            guard end > start else { return nil }
            switch segment {
            case .literal(let l):
                guard p[start..<end].elementsEqual(l.utf8) else { return nil }
            case .variable(let name):
                out.append(.init(name: name, value: String(decoding: p[start..<end], as: UTF8.self)))
            case .rest:
                preconditionFailure("handled above")
            }
            pos = end
        }
        guard pos == n || (pos == n - 1 && p[pos] == UInt8(ascii: "/")) else { return nil }
        return PathParameters(out)
    }

    /// Why a template was refused; `message` is what check-config says after the template.
    enum Refusal: Error, Equatable {
        case notAbsolute, unclosedBrace, strayBrace, emptyName, emptySegment, trailingSlash, noVariable
        case badName(String)
        case repeatedName(String)
        case restNotLast(String)
        case partialSegment(String)
        case notNormal(String)

        var message: String {
            switch self {
            case .notAbsolute: return "must start with /"
            case .unclosedBrace: return "has a { that is not closed by } within its segment"
            case .strayBrace: return "has a } with no { before it"
            case .emptyName: return "has a variable with an empty name ({} or {*})"
            case .emptySegment: return "has an empty segment (//)"
            case .trailingSlash:
                return "ends with /; leave it out (a template matches with or without one trailing /)"
            case .noVariable: return "has no {variable}; use path: for an exact path"
            case .badName(let n): return "has the variable name \"\(n)\": names may hold only A-Z, a-z, 0-9 and _"
            case .repeatedName(let n): return "names the variable \(n) twice"
            case .restNotLast(let n): return "has {\(n)*} before its last segment; {name*} takes the rest of the path"
            case .partialSegment(let s):
                return "has the segment \"\(s)\": a variable must be a whole segment, such as /{id}"
            case .notNormal(let s):
                return
                    "has the segment \"\(s)\", which is not a normalized path segment (no dot-segments, query, encoded unreserved characters or lowercase escapes)"
            }
        }
    }
}
