public import JOSE

/// A multi-tenant issuer: one `{tenant}` in the issuer URL stands for the tenant a token
/// names in its own tenant claim (Entra ID: `https://login.microsoftonline.com/{tenant}/v2.0`
/// with `tid`). A token is accepted only when its `iss` is exactly the template filled with
/// that claim's value, and that tenant is allowed — so a token of tenant A can never pass as
/// tenant B's, and a tenant not on the list never passes at all, whatever it signs with the
/// provider's common keys.
public struct IssuerTemplate: Sendable, Equatable {
    /// The placeholder written in the configured issuer.
    public static let placeholder = "{tenant}"

    /// Which tenants may be the token's.
    public enum Tenants: Sendable, Equatable {
        /// Every tenant of the provider (`tenants: any`).
        case any
        /// Only these tenant ids, compared exactly.
        case only(Set<String>)
    }

    /// Why a token's issuer did not fit the template: the wire gets `description`.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// The token has no tenant claim, or not a usable string.
        case missingTenant(claim: String)
        /// The tenant claim names a tenant other than the one in `iss`.
        case tenantMismatch(claim: String)
        /// The tenant is not on the allow-list.
        case tenantNotAllowed

        public var description: String {
            switch self {
            case .missingTenant(let c): "the token has no \(c) (tenant) claim"
            case .tenantMismatch(let c): "the token's \(c) (tenant) claim does not match its issuer"
            case .tenantNotAllowed: "the token's tenant is not accepted here"
            }
        }
    }

    /// The issuer text before and after `{tenant}`.
    public let prefix: String
    public let suffix: String
    public var tenants: Tenants
    /// The claim that names the token's tenant (`tid` for Entra ID).
    public var tenantClaim: String

    /// nil unless `template` holds `{tenant}` exactly once.
    public init?(_ template: String, tenants: Tenants, tenantClaim: String = "tid") {
        guard let r = template.firstRange(of: Self.placeholder),
            template[r.upperBound...].firstRange(of: Self.placeholder) == nil
        else { return nil }
        prefix = String(template[..<r.lowerBound])
        suffix = String(template[r.upperBound...])
        self.tenants = tenants
        self.tenantClaim = tenantClaim
    }

    /// The configured form, with `{tenant}`.
    public var template: String { prefix + Self.placeholder + suffix }

    /// The issuer of `tenant`.
    public func filled(_ tenant: String) -> String { prefix + tenant + suffix }

    /// Whether `iss` has the template's shape (its prefix and suffix around something):
    /// what picks this issuer for a token before any other check.
    public func fits(_ iss: String) -> Bool {
        iss.utf8.count > prefix.utf8.count + suffix.utf8.count && iss.hasPrefix(prefix) && iss.hasSuffix(suffix)
    }

    /// The tenant of a token whose `iss` fits: its tenant claim, which must fill the template
    /// to exactly `iss` and be allowed (a value that is no `isTenantID` never is).
    public func tenant(iss: String, claims: JSONObject) -> Result<String, Refusal> {
        guard let tenant = claims[tenantClaim]?.string, Self.isTenantID(tenant) else {
            return .failure(.missingTenant(claim: tenantClaim))
        }
        guard filled(tenant) == iss else { return .failure(.tenantMismatch(claim: tenantClaim)) }
        if case .only(let allowed) = tenants, !allowed.contains(tenant) { return .failure(.tenantNotAllowed) }
        return .success(tenant)
    }

    /// One path segment of printable ASCII without `/ ? # %` (which would make the filled
    /// issuer another URL) or braces (a template's placeholders, `{tenant}` and `{tenantid}`).
    public static func isTenantID(_ s: String) -> Bool {
        !s.isEmpty
            && s.utf8.allSatisfy { b in
                b > 0x20 && b < 0x7f && b != UInt8(ascii: "/") && b != UInt8(ascii: "?") && b != UInt8(ascii: "#")
                    && b != UInt8(ascii: "%") && b != UInt8(ascii: "{") && b != UInt8(ascii: "}")
            }
    }

    /// The same, as the JOSE error a verifier throws (`issuer_mismatch` on the tenant claim).
    public func check(iss: String, claims: JSONObject) throws(JOSEError) {
        if case .failure(let refusal) = tenant(iss: iss, claims: claims) {
            throw JOSEError(.issuerMismatch, claim: tenantClaim, refusal.description)
        }
    }

    /// The `issuer` values a discovery document of this template may say besides the template
    /// itself: the form with Entra ID's literal `{tenantid}` (its `/common` and
    /// `/organizations` documents say `https://login.microsoftonline.com/{tenantid}/v2.0`),
    /// and the template filled with `tenant`, the path segment the document was fetched under.
    public func discoveryIssuers(fetchedAs tenant: String) -> [String] {
        [filled("{tenantid}"), filled(tenant)]
    }
}

extension IssuerTemplate {
    /// The tenant segment of an `iss` that fits, when that tenant is allowed (an RFC 9207
    /// `iss` parameter, which comes with no tenant claim beside it); nil otherwise.
    public func allowedTenant(ofIssuer iss: String) -> String? {
        guard fits(iss) else { return nil }
        let tenant = String(iss.dropFirst(prefix.count).dropLast(suffix.count))
        guard Self.isTenantID(tenant) else { return nil }
        if case .only(let allowed) = tenants, !allowed.contains(tenant) { return nil }
        return tenant
    }

    /// The `iss` rule of a token verified outside `AccessTokenVerifier` (ID tokens, logout
    /// tokens): the exact issuer or one of its aliases, or with a template its tenant rule.
    /// `JWTClaimsPolicy` is then given no issuer (`exactIssuer` nil): this decides.
    static func checkIssuer(_ claims: JSONObject, issuer: String, aliases: [String], templates: [IssuerTemplate])
        throws(JOSEError)
    {
        guard let iss = claims["iss"]?.string else { throw JOSEError(.missingClaim, claim: "iss", "is required") }
        if !templates.isEmpty {
            let fitting = templates.filter { $0.fits(iss) }
            guard let first = fitting.first else {
                throw JOSEError(.issuerMismatch, claim: "iss", "unexpected issuer")
            }
            for template in fitting {
                if case .success = template.tenant(iss: iss, claims: claims) { return }
            }
            try first.check(iss: iss, claims: claims)
        } else if iss != issuer && !aliases.contains(iss) {
            throw JOSEError(.issuerMismatch, claim: "iss", "unexpected issuer")
        }
    }
}
