/// A caller is the issuer's: a `sub`, `client_id` or claim one IdP mints says nothing of
/// another IdP's user with the same value. So the value of an identity key is counted, and
/// matched against `overrides`, with the `issuers` entry that vouched for the caller
/// (`RateLimitStage.value`); the config writes an override for one as `ISSUER/VALUE`.
extension RateLimitKey {
    /// Whether its value names a caller some issuer vouched for.
    var namesCaller: Bool {
        switch self {
        case .subject, .clientID, .claim, .tool: true
        case .jkt, .certificate, .ip, .header: false
        }
    }

    /// Whether the token a request was admitted with fixes its value, so that every request
    /// its connection's `BearerMemo` admits has the same one: the caller and the claims are
    /// the token's. Not the address, a header, the certificate or the MCP tool, which each
    /// request brings anew.
    var fixedByToken: Bool {
        switch self {
        case .subject, .clientID, .jkt, .claim: true
        case .certificate, .ip, .header, .tool: false
        }
    }
}

extension RateLimitPolicy {
    /// This policy as a route whose callers `vouchers` (names of `issuers` entries) vouch
    /// for applies it. An override of an identity key that names its issuer (`one/svc-batch`,
    /// ISSUER one of `issuers`) applies when that issuer vouches here; a bare one
    /// (`svc-batch`) is the route's issuer's when it has exactly one, and matches no caller on
    /// a route with several (check-config says so). `tool` overrides are left as written.
    func onRoute(vouchers: Set<String>, issuers: Set<String>) -> RateLimitPolicy {
        guard key.namesCaller, key != .tool, !overrides.isEmpty else { return self }
        var resolved: [String: RateLimitRule] = [:]
        for (value, rule) in overrides {
            if let issuer = Self.issuer(of: value, among: issuers) {
                if vouchers.contains(issuer) { resolved[Self.key(issuer, value.dropFirst(issuer.count + 1))] = rule }
            } else if vouchers.count == 1, let only = vouchers.first {
                resolved[Self.key(only, value[...])] = rule
            }
        }
        var copy = self
        copy.overrides = resolved
        return copy
    }

    /// An identity key's value as counted: the issuer's name and the value apart by a NUL,
    /// which neither a config name nor a claim read from JSON text can hold unescaped, so no
    /// two (issuer, value) pairs meet, whatever `/` they hold.
    static func key(_ issuer: String, _ value: Substring) -> String { issuer + "\u{0}" + value }

    /// The ISSUER of an `ISSUER/VALUE` override, when it is one of `issuers`; nil for a bare
    /// value (which may hold a `/` of its own).
    static func issuer(of value: String, among issuers: Set<String>) -> String? {
        guard let slash = value.firstIndex(of: "/") else { return nil }
        let issuer = String(value[..<slash])
        return issuers.contains(issuer) ? issuer : nil
    }

    /// The bare overrides of an identity key (no ISSUER of `issuers` before a `/`), which
    /// name no caller on a route several issuers vouch for.
    func bareOverrides(issuers: Set<String>) -> [String] {
        guard key.namesCaller, key != .tool else { return [] }
        return overrides.keys.filter { Self.issuer(of: $0, among: issuers) == nil }.sorted()
    }
}
