/// A route's `host:` — an exact name or a `*.` wildcard (any depth of labels in front of
/// the suffix; the bare suffix itself does not match). Compared case-insensitively.
enum HostPattern: Sendable, Hashable {
    case exact(String)
    /// Stored with its leading dot: `*.example.com` → ".example.com".
    case wildcard(suffix: String)

    init?(_ text: String) {
        let lower = text.lowercased()
        if lower.hasPrefix("*.") {
            let suffix = String(lower.dropFirst())
            guard suffix.count > 1, !suffix.contains("*"), HostPattern.validName(String(suffix.dropFirst())) else {
                return nil
            }
            self = .wildcard(suffix: suffix)
        } else {
            guard HostPattern.validName(lower) else { return nil }
            self = .exact(lower)
        }
    }

    /// `host` is already normalized (lowercase, no port, no trailing dot).
    func matches(_ host: String) -> Bool {
        switch self {
        case .exact(let name): return host == name
        case .wildcard(let suffix): return host.count > suffix.count && host.hasSuffix(suffix)
        }
    }

    /// Higher is more specific: exact beats wildcard; longer wildcard suffix beats shorter.
    var specificity: Int {
        switch self {
        case .exact: return 1_000_000
        case .wildcard(let suffix): return suffix.count
        }
    }

    /// Lowercase ASCII letters, digits and "-", in non-empty dot-separated labels. One pass
    /// over the bytes: `HostNormalizer` runs it on every request's Host.
    static func validName(_ name: String) -> Bool {
        let bytes = name.utf8.span
        var labelEmpty = true
        for i in bytes.indices {
            switch bytes[i] {
            case UInt8(ascii: "."):
                if labelEmpty { return false }
                labelEmpty = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                labelEmpty = false
            default:
                return false
            }
        }
        return !labelEmpty
    }
}

/// A route's path rule: `path:` (exact), `path_prefix:` or `path_template:`. A prefix that ends
/// in "/" matches everything under it; one that does not matches itself and whatever follows a
/// "/" — so `/api` matches `/api` and `/api/x`, never `/apiary`. A template: `PathTemplate`.
enum PathPattern: Sendable, Equatable {
    case exact(String)
    case prefix(String)
    case template(PathTemplate)

    func matches(_ path: String) -> Bool {
        switch self {
        // An exact path also matches with a trailing "/": frameworks serve both as one endpoint.
        case .exact(let p):
            return path == p || (path.utf8.count == p.utf8.count + 1 && path.hasPrefix(p) && path.hasSuffix("/"))
        case .prefix(let p):
            guard path.hasPrefix(p) else { return false }
            if p.hasSuffix("/") || path.utf8.count == p.utf8.count { return true }
            return path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: p.utf8.count)] == UInt8(ascii: "/")
        case .template(let t):
            return t.parameters(in: path) != nil
        }
    }

    /// Higher is more specific, compared element by element: an exact path beats any template,
    /// a template any prefix; a longer exact path or prefix beats a shorter one; templates
    /// rank by `PathTemplate.rank`.
    var specificity: [Int] {
        switch self {
        case .exact(let p): return [2, p.utf8.count]
        case .template(let t): return [1] + t.rank
        case .prefix(let p): return [0, p.utf8.count]
        }
    }

    /// The template of a `path_template:` rule.
    var template: PathTemplate? {
        if case .template(let t) = self { return t }
        return nil
    }
}
