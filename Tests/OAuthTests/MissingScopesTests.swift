import JOSE
import Testing

@testable import OAuth

/// `AuthorizationRequirement.missingScopes` (the per-request check, without a set) must name
/// exactly the scopes `grantedScopes` lacks, however the claim is written.
@Suite("Scope check without a set")
struct MissingScopesTests {
    static let wanted = ["a", "b", "café", "", " ", "a b", "x"]

    @Test func agreesWithGrantedScopesOnEveryShapeOfClaim() throws {
        let claims = [
            #"{"scope":"a b"}"#, #"{"scope":"  a   b  "}"#, #"{"scope":""}"#, #"{"scope":"a \u0301b"}"#,
            #"{"scope":"cafe\u0301"}"#, #"{"scope":"café x"}"#, #"{"scope":["a","b"]}"#, #"{"scope":7}"#,
            #"{"scp":["a","b",3,null]}"#, #"{"scp":"a b"}"#, #"{"scp":[]}"#, "{}"
        ]
        for text in claims {
            let object = try JSONParser.parse(text).object!
            for claim in [ScopeClaim.scope, .scp] {
                let granted = AuthorizationRequirement.grantedScopes(object, from: claim)
                let want = Self.wanted.filter { !granted.contains($0) }
                #expect(
                    AuthorizationRequirement.missingScopes(Self.wanted, object, from: claim) == want,
                    "\(text) \(claim)")
            }
        }
    }

    @Test func theRequirementReportsWhatIsMissing() throws {
        let object = try JSONParser.parse(#"{"scope":"orders:read cafe\u0301"}"#).object!
        #expect(AuthorizationRequirement(scopes: ["orders:read", "café"]).check(object) == nil)
        #expect(
            AuthorizationRequirement(scopes: ["orders:write", "orders:read", "orders"]).check(object)
                == .missingScopes(["orders:write", "orders"]))
    }
}
