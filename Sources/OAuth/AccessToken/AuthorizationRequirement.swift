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

    /// The rules, held in one box that copies on write: a requirement is passed by value
    /// wherever a route, an MCP rule or a check takes it, and a copy of eight stored arrays
    /// (made and let go) was sixteen reference counts; of one box it is two.
    /// Unchecked exclusivity: a box is written only while its one requirement holds it, so
    /// no access can overlap a write, and each checked read was a runtime call.
    private final class Rules: @unchecked Sendable {  // written only while uniquely referenced
        @exclusivity(unchecked) var scopes: [String]
        @exclusivity(unchecked) var roles: [String] = []
        @exclusivity(unchecked) var claims: [(path: ClaimPath, rule: Rule)]
        @exclusivity(unchecked) var emailDomains: [String] = []
        @exclusivity(unchecked) var anyOf: [AuthorizationRequirement] = []
        @exclusivity(unchecked) var issuers: [String] = []
        @exclusivity(unchecked) var clients: [String] = []
        @exclusivity(unchecked) var acr: [String] = []
        @exclusivity(unchecked) var maxAge: Int? = nil

        init(scopes: [String], claims: [(path: ClaimPath, rule: Rule)]) {
            self.scopes = scopes
            self.claims = claims
        }

        init(copying other: Rules) {
            scopes = other.scopes
            roles = other.roles
            claims = other.claims
            emailDomains = other.emailDomains
            anyOf = other.anyOf
            issuers = other.issuers
            clients = other.clients
            acr = other.acr
            maxAge = other.maxAge
        }
    }

    private var rules: Rules

    /// The box, copied first if another requirement shares it.
    private mutating func writable() -> Rules {
        if !isKnownUniquelyReferenced(&rules) { rules = Rules(copying: rules) }
        return rules
    }

    public var scopes: [String] {
        get { rules.scopes }
        set { writable().scopes = newValue }
    }
    /// `roles`: every one of these is in one of the issuer's role claims (Entra ID `roles`,
    /// Keycloak `realm_access.roles`, Auth0 `permissions` …: `RoleClaims`).
    public var roles: [String] {
        get { rules.roles }
        set { writable().roles = newValue }
    }
    public var claims: [(path: ClaimPath, rule: Rule)] {
        get { rules.claims }
        set { writable().claims = newValue }
    }
    /// `email_domains`: the `email` claim's domain is one of these or a subdomain of one, and
    /// `email_verified` is true (see `EmailDomainRule`). Empty: no such rule.
    public var emailDomains: [String] {
        get { rules.emailDomains }
        set { writable().emailDomains = newValue }
    }
    /// `any_of`: at least one of these requirements is met (OR); each is a whole requirement.
    public var anyOf: [AuthorizationRequirement] {
        get { rules.anyOf }
        set { writable().anyOf = newValue }
    }
    /// `issuers`: the credential was vouched for by one of these configured issuers (a token
    /// verified against it; a session whose login client uses it). Empty: no such rule.
    /// Routes that accept several IdPs need it: one IdP can mint another's user's sub or groups.
    public var issuers: [String] {
        get { rules.issuers }
        set { writable().issuers = newValue }
    }
    /// `clients`: a session logged in through one of these login clients (a token never is).
    public var clients: [String] {
        get { rules.clients }
        set { writable().clients = newValue }
    }
    /// `acr` (RFC 9470 §2, OIDC Core §2): the authentication context class the credential
    /// says (`acr` claim) is one of these. Empty: no such rule.
    public var acr: [String] {
        get { rules.acr }
        set { writable().acr = newValue }
    }
    /// `max_age` (RFC 9470 §2): the user authenticated at most this many seconds ago
    /// (`auth_time` claim, which must then be present). nil: no such rule.
    public var maxAge: Int? {
        get { rules.maxAge }
        set { writable().maxAge = newValue }
    }

    /// No rule at all: always met.
    public var isEmpty: Bool {
        scopes.isEmpty && roles.isEmpty && claims.isEmpty && emailDomains.isEmpty && anyOf.isEmpty && issuers.isEmpty
            && clients.isEmpty
            && !hasStepUp
    }

    /// Whether it asks for a level or a freshness of authentication (RFC 9470).
    public var hasStepUp: Bool { !acr.isEmpty || maxAge != nil }

    /// Why the credential's authentication is not what this requires (RFC 9470 §3:
    /// `insufficient_user_authentication`), or nil when it is. `now` in Unix seconds;
    /// `leeway`: the issuer's allowed clock skew, how far ahead an `auth_time` may be;
    /// `maxAgeGrace`: seconds added to `max_age` (a login reads it with the leeway too).
    public func stepUpFailure(
        _ claims: JSONObject, now: Int64, leeway: Int64 = 0, maxAgeGrace: Int64 = 0
    ) -> StepUpFailure? {
        if !acr.isEmpty {
            guard let said = claims["acr"]?.string, acr.contains(said) else {
                return .acr(claims["acr"]?.string)
            }
        }
        if let maxAge {
            guard let said = claims["auth_time"] else { return .noAuthTime }
            // Admission refuses a date outside the window; a session stored before that rule
            // may still hold one, and it is no proof of a recent login either.
            guard let authTime = said.numericDate else { return .unusableAuthTime }
            // OIDC Core §2: auth_time is when the user authenticated; one still ahead of the
            // clock (past the skew allowed) says nothing about how recent that was. Both ends
            // are admitted dates and the spans are config's: saturating, nothing traps.
            let ahead = authTime.saturatingSubtract(now)
            if ahead > leeway { return .futureAuthTime(seconds: ahead) }
            // The grace widens max_age: seen from `now - grace`, auth_time is that much younger.
            let age = now.saturatingSubtract(maxAgeGrace).saturatingSubtract(authTime)
            if age > Int64(maxAge) { return .tooOld(seconds: age) }
        }
        return nil
    }

    /// Until when (Unix seconds) a credential that meets `max_age` now still will: nil when
    /// the rule is not set (or the credential has no usable `auth_time`).
    public func stepUpValidUntil(_ claims: JSONObject) -> Int64? {
        guard let maxAge, let authTime = claims["auth_time"]?.numericDate else { return nil }
        return authTime.saturatingAdd(Int64(maxAge))
    }

    public enum StepUpFailure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The `acr` the credential says (nil: none) is not one of the listed.
        case acr(String?)
        /// `max_age` is set and the credential has no `auth_time`.
        case noAuthTime
        /// The user authenticated this long ago, more than `max_age`.
        case tooOld(seconds: Int64)
        /// `auth_time` is this far ahead of the clock, more than the leeway.
        case futureAuthTime(seconds: Int64)
        /// `auth_time` is no NumericDate within `NumericDate.range`.
        case unusableAuthTime

        public var description: String {
            switch self {
            case .acr(let said): "acr \(said.map { "\"\($0)\"" } ?? "missing") is not one the route accepts"
            case .noAuthTime: "max_age is set and the credential has no auth_time"
            case .tooOld(let s): "the user authenticated \(s) s ago, past max_age"
            case .futureAuthTime(let s): "auth_time is \(s) s in the future"
            case .unusableAuthTime: "auth_time is not a date a credential may carry"
            }
        }
    }

    /// Every way to meet it names who vouched (issuers or clients).
    public var isScoped: Bool {
        !issuers.isEmpty || !clients.isEmpty || (!anyOf.isEmpty && anyOf.allSatisfy(\.isScoped))
    }

    public init(scopes: [String] = [], claims: [(path: ClaimPath, rule: Rule)] = []) {
        rules = Rules(scopes: scopes, claims: claims)
    }

    public static func == (a: Self, b: Self) -> Bool {
        if a.rules === b.rules { return true }
        return a.scopes == b.scopes && a.roles == b.roles && a.claims.count == b.claims.count
            && zip(a.claims, b.claims).allSatisfy { $0.path == $1.path && $0.rule == $1.rule }
            && a.emailDomains == b.emailDomains && a.anyOf == b.anyOf && a.issuers == b.issuers
            && a.clients == b.clients && a.acr == b.acr && a.maxAge == b.maxAge
    }

    public enum Failure: Error, Equatable, Sendable {
        case missingScopes([String])
        /// `roles` not met: the roles none of the issuer's role claims holds.
        case missingRoles([String])
        case claim(String)
        /// `email_domains` failed: why (no verified email, or which domain it has).
        case emailDomain(String)
        /// No alternative of `any_of` was met: each alternative's failure, in order.
        case anyOf([Failure])
        /// `issuers` / `clients` not met: who vouched instead ("issuer NAME", "client NAME", or "no client").
        case vouchedBy(String)
    }

    /// The top-level claim names the requirement reads (a session must keep them).
    public var claimNames: Set<String> {
        var names = Set(claims.compactMap { $0.path.components.first })
        if !emailDomains.isEmpty { names.formUnion(["email", "email_verified"]) }
        if !scopes.isEmpty { names.insert("scope") }
        if !roles.isEmpty { names.insert("roles") }
        if !acr.isEmpty { names.insert("acr") }
        if maxAge != nil { names.insert("auth_time") }
        for alternative in anyOf { names.formUnion(alternative.claimNames) }
        return names
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

    /// Those of `wanted` the token does not grant — `grantedScopes` without building a set
    /// (this runs on every request of a route that requires scopes; a token names a few).
    static func missingScopes(_ wanted: [String], _ claims: JSONObject, from claim: ScopeClaim) -> [String] {
        switch (claim, claims[claim.rawValue]) {
        case (_, .string(let s)?):
            // All ASCII (scope-token is %x21 / %x23-5B / %x5D-7E, RFC 6749 §3.3): bytes are
            // Characters and equal only as bytes. Otherwise split and compared as
            // `grantedScopes` does (Characters, canonical equivalence: "\u{212A}" == "K").
            if let missing = missingASCIIScopes(wanted, s) { return missing }
            let granted = s.split(separator: " ")
            return wanted.filter { w in !granted.contains { $0 == w } }
        case (.scp, .array(let a)?):
            return wanted.filter { w in !a.contains { $0.string == w } }
        default: return wanted
        }
    }

    /// `missingScopes` over the bytes, or nil unless the claim and every wanted scope are ASCII.
    static func missingASCIIScopes(_ wanted: [String], _ claim: String) -> [String]? {
        var claim = claim
        return claim.withUTF8 { granted -> [String]? in
            guard granted.allSatisfy({ $0 < 0x80 }) else { return nil }
            var missing: [String] = []
            for w in wanted {
                var w = w
                let found: Bool? = w.withUTF8 { want in
                    guard want.allSatisfy({ $0 < 0x80 }) else { return nil }
                    // The claim's space-separated, non-empty pieces, each compared whole.
                    var start = 0
                    while start < granted.count {
                        var end = start
                        while end < granted.count && granted[end] != UInt8(ascii: " ") { end += 1 }
                        if end - start == want.count && end > start
                            && UnsafeBufferPointer(rebasing: granted[start..<end]).elementsEqual(want)
                        {
                            return true
                        }
                        start = end + 1
                    }
                    return false
                }
                guard let found else { return nil }
                if !found { missing.append(w) }
            }
            return missing
        }
    }

    /// `issuer` / `client`: the configured issuer and login client that vouched for the caller
    /// (a token has no client).
    /// `roleClaims`: where the issuer puts roles (`roles` unless it says otherwise).
    /// `implication`: the issuer's scope hierarchy, by which a broader scope the claims hold
    /// meets a narrower one the requirement names.
    public func check(
        _ claims: JSONObject, scopeClaim: ScopeClaim = .scope, roleClaims: [ClaimPath] = RoleClaims.standard,
        issuer: String? = nil, client: String? = nil, implication: ScopeImplication? = nil
    ) -> Failure? {
        if !issuers.isEmpty && !issuers.contains(issuer ?? "\u{0}") {
            return .vouchedBy("issuer \(issuer ?? "unknown")")
        }
        if !clients.isEmpty && !clients.contains(client ?? "\u{0}") {
            return .vouchedBy(client.map { "client \($0)" } ?? "no login client")
        }
        if !scopes.isEmpty {
            var missing = Self.missingScopes(scopes, claims, from: scopeClaim)
            if !missing.isEmpty, let implication {
                missing = implication.stillMissing(missing) {
                    Self.missingScopes([$0], claims, from: scopeClaim).isEmpty
                }
            }
            if !missing.isEmpty { return .missingScopes(missing) }
        }
        if !roles.isEmpty {
            let missing = roles.filter { !RoleClaims.grants($0, claims, in: roleClaims) }
            if !missing.isEmpty { return .missingRoles(missing) }
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
        if !emailDomains.isEmpty, let why = EmailDomainRule.failure(claims, domains: emailDomains) {
            return .emailDomain(why)
        }
        if !anyOf.isEmpty {
            var failures: [Failure] = []
            for alternative in anyOf {
                guard
                    let f = alternative.check(
                        claims, scopeClaim: scopeClaim, roleClaims: roleClaims, issuer: issuer, client: client,
                        implication: implication)
                else {
                    return nil
                }
                failures.append(f)
            }
            return .anyOf(failures)
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
