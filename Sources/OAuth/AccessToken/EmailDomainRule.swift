public import JOSE

/// `require.email_domains`: the caller's verified email address is in one of the listed
/// domains. Only a verified address counts (OIDC Core §5.1 `email_verified`: without it the
/// AS vouches for nothing, and anyone can sign up as `ceo@example.com`). A domain matches
/// itself and its subdomains, compared label by label, case-insensitively (RFC 4343):
/// `example.com` matches `a@example.com` and `a@eu.example.com`, never
/// `a@evil-example.com` or `a@example.com.evil.net`.
public enum EmailDomainRule {
    /// nil when the claims meet the rule; else why not (for the log, never the wire).
    public static func failure(_ claims: JSONObject, domains: [String]) -> String? {
        guard claims["email_verified"] == .bool(true) else {
            return "email_domains: the email is not verified (email_verified is not true)"
        }
        guard let email = claims["email"]?.string else { return "email_domains: no email claim" }
        // The domain is what follows the last "@" (a quoted local part may hold "@" itself).
        guard let at = email.lastIndex(of: "@") else { return "email_domains: the email has no domain" }
        let domain = email[email.index(after: at)...].lowercased()
        guard !domain.isEmpty else { return "email_domains: the email has no domain" }
        for allowed in domains where matches(domain, allowed.lowercased()) { return nil }
        return "email_domains: \(domain) is not among \(domains.joined(separator: ", "))"
    }

    /// `domain` is `allowed` or ends in `.allowed` (both lowercased).
    static func matches(_ domain: String, _ allowed: String) -> Bool {
        domain == allowed || domain.hasSuffix("." + allowed)
    }
}

extension AuthorizationRequirement.Failure: CustomStringConvertible {
    /// Names the rule that failed, for the log (a 403's body never says which).
    public var description: String {
        switch self {
        case .missingScopes(let s): return "missing scopes: \(s.joined(separator: " "))"
        case .missingRoles(let r): return "missing roles: \(r.joined(separator: " "))"
        case .claim(let c): return "claim requirement not met: \(c)"
        case .emailDomain(let why): return why
        case .vouchedBy(let who): return "vouched for by \(who), not one the rule names"
        case .anyOf(let all):
            return "any_of: no alternative met (" + all.enumerated().map { "[\($0)] \($1)" }.joined(separator: "; ")
                + ")"
        }
    }
}
