public import JOSE

/// Where an issuer's tokens carry roles, which `require.roles` reads: no standard names one
/// (RFC 9068 §2.2.3.1 borrows SCIM's `roles` and `groups`, RFC 7643 §4.1.2), and each IdP picks
/// its own — Entra ID `roles`, Keycloak `realm_access.roles` and `resource_access.CLIENT.roles`,
/// Auth0 `permissions`, Cognito `cognito:groups`.
public enum RoleClaims {
    /// `roles` (RFC 9068 §2.2.3.1), when the issuer says nothing else.
    public static let standard = [ClaimPath("roles")!]

    /// Whether `role` is in one of `paths`: an array holding it, or a space-separated string.
    public static func grants(_ role: String, _ claims: JSONObject, in paths: [ClaimPath]) -> Bool {
        paths.contains { path in
            switch path.value(in: claims) {
            case .array(let a)?: a.contains { $0.string == role }
            case .string(let s)?: s.split(separator: " ").contains { $0 == role }
            default: false
            }
        }
    }
}
