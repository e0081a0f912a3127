public import JOSE

/// Which claim holds a token's scopes. RFC 9068 §2.2.3 and RFC 8693 §4.2 name `scope`, a
/// space-separated string; some ASes (Okta, Entra ID) use `scp` instead, an array or a
/// string. An issuer reads exactly one of them — never the union, in which a vendor claim
/// could widen what `scope` grants.
public enum ScopeClaim: String, Sendable, Equatable, CaseIterable {
    case scope, scp
}

/// What a route requires of a verified token's claims: scopes (from the issuer's one
/// `ScopeClaim`) and claim rules. Failing it is `insufficient_scope` (RFC 6750
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

    /// The token's scopes, read from `claim` alone: `scope` as a space-separated string;
    /// `scp` as an array of strings or a space-separated string.
    public static func grantedScopes(_ claims: JSONObject, from claim: ScopeClaim = .scope) -> Set<String> {
        switch (claim, claims[claim.rawValue]) {
        case (_, .string(let s)?): return Set(s.split(separator: " ").map(String.init))
        case (.scp, .array(let a)?): return Set(a.compactMap(\.string))
        default: return []
        }
    }

    public func check(_ claims: JSONObject, scopeClaim: ScopeClaim = .scope) -> Failure? {
        if !scopes.isEmpty {
            let granted = Self.grantedScopes(claims, from: scopeClaim)
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
