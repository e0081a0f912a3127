public import JOSE

/// What a route requires of a verified token's claims: scopes (RFC 6749 §3.3 `scope` string
/// or the common `scp` array) and claim rules. Failing it is `insufficient_scope` (RFC 6750
/// §3.1), 403.
public struct AuthorizationRequirement: Sendable, Equatable {
    public enum Rule: Sendable, Equatable {
        /// The claim equals this string (or number/bool given as its JSON text).
        case equals(String)
        /// The claim equals one of these.
        case oneOf([String])
        /// The claim is an array that contains this value.
        case contains(String)
    }

    public var scopes: [String]
    public var claims: [(path: ClaimPath, rule: Rule)]

    public init(scopes: [String] = [], claims: [(path: ClaimPath, rule: Rule)] = []) {
        self.scopes = scopes
        self.claims = claims
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.scopes == b.scopes && a.claims.count == b.claims.count
            && zip(a.claims, b.claims).allSatisfy { $0.path == $1.path && $0.rule == $1.rule }
    }

    public enum Failure: Error, Equatable, Sendable {
        case missingScopes([String])
        case claim(String)
    }

    /// The token's scopes: `scope` (space-separated string) and/or `scp` (array or string).
    public static func grantedScopes(_ claims: JSONObject) -> Set<String> {
        var out = Set<String>()
        if let s = claims["scope"]?.string { out.formUnion(s.split(separator: " ").map(String.init)) }
        switch claims["scp"] {
        case .array(let a)?: out.formUnion(a.compactMap(\.string))
        case .string(let s)?: out.formUnion(s.split(separator: " ").map(String.init))
        default: break
        }
        return out
    }

    public func check(_ claims: JSONObject) -> Failure? {
        if !scopes.isEmpty {
            let granted = Self.grantedScopes(claims)
            let missing = scopes.filter { !granted.contains($0) }
            if !missing.isEmpty { return .missingScopes(missing) }
        }
        for (path, rule) in self.claims {
            let value = path.value(in: claims)
            let ok: Bool
            switch rule {
            case .equals(let want): ok = value.map { Self.text($0) == want } ?? false
            case .oneOf(let allowed): ok = value.map { v in allowed.contains(Self.text(v) ?? "\u{0}") } ?? false
            case .contains(let want): ok = value?.array?.contains { Self.text($0) == want } ?? false
            }
            if !ok { return .claim(path.description) }
        }
        return nil
    }

    /// Scalars compare by their text; arrays and objects never equal a string.
    static func text(_ v: JSONValue) -> String? {
        switch v {
        case .string(let s): return s
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        default: return nil
        }
    }
}
