public import JOSE

/// The claims RFC 9068 §2.2 says a JWT access token MUST carry, checked on an issuer that
/// declared the profile (`access_token_type: at+jwt`). The shared claims policy already
/// covers `iss` (exact match), `exp` (required) and `aud` (one of the issuer's audiences);
/// this adds the rest, so a token typed as RFC 9068 cannot reach the upstream without the
/// identity it promises:
/// - `sub` (§2.2: "the subject of the token"): a non-empty string. Without it the upstream
///   would get no user header, or an empty one, for a token the AS typed as complete.
/// - `client_id` (§2.2, RFC 8693 §4.3): a non-empty string.
/// - `iat` (§2.2): present, a NumericDate (its type and future bound are the policy's).
/// - `jti` (§2.2): a non-empty string. Only its presence: an access token is used many
///   times, so it is no replay key here.
public enum RFC9068Claims {
    /// Whether a required `typ` names the RFC 9068 profile (`at+jwt`, `application/at+jwt`).
    public static func isProfile(_ requiredType: String?) -> Bool {
        requiredType.map { JWSHeader.typesMatch($0, "at+jwt") } ?? false
    }

    /// The string claims §2.2 requires, prepared for lookups once.
    static let requiredStrings = ["sub", "client_id", "jti"].map(JSONObject.Name.init)
    static let iatName = JSONObject.Name("iat")

    public static func validate(_ claims: JSONObject) throws {
        for name in requiredStrings {
            guard let value = claims[name] else {
                throw JOSEError(.missingClaim, claim: name.text, "is required (RFC 9068 §2.2)")
            }
            guard let s = value.string, !s.isEmpty else {
                throw JOSEError(.invalidClaim, claim: name.text, "must be a non-empty string (RFC 9068 §2.2)")
            }
        }
        guard let iat = claims[iatName] else {
            throw JOSEError(.missingClaim, claim: "iat", "is required (RFC 9068 §2.2)")
        }
        guard iat.int64 != nil else {
            throw JOSEError(.invalidClaim, claim: "iat", "must be a NumericDate (RFC 9068 §2.2)")
        }
    }
}
