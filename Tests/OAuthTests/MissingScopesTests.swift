import JOSE
import Testing

@testable import OAuth

/// `AuthorizationRequirement.missingScopes` (the per-request check, without a set) must name
/// exactly the scopes `grantedScopes` lacks, however the claim is written.
@Suite("Scope check without a set")
struct MissingScopesTests {
    /// ASCII-only (the byte path) and not (the Character path).
    static let wantedLists = [
        ["a", "b", "", " ", "a b", "x", "K", "a\r\n", "a\tb"], ["a", "b", "café", "K", "\u{212A}", "a\r\n"]
    ]

    @Test func agreesWithGrantedScopesOnEveryShapeOfClaim() throws {
        let claims = [
            #"{"scope":"a b"}"#, #"{"scope":"  a   b  "}"#, #"{"scope":""}"#, #"{"scope":"a \u0301b"}"#,
            #"{"scope":"cafe\u0301"}"#, #"{"scope":"café x"}"#, #"{"scope":["a","b"]}"#, #"{"scope":7}"#,
            #"{"scope":"K a"}"#, #"{"scope":"\u212A a"}"#, #"{"scope":"a\r\n b"}"#, #"{"scope":"a\tb"}"#,
            #"{"scp":["a","b",3,null]}"#, #"{"scp":"a b"}"#, #"{"scp":[]}"#, "{}"
        ]
        for text in claims {
            let object = try JSONParser.parse(text).object!
            for claim in [ScopeClaim.scope, .scp] {
                for wanted in Self.wantedLists {
                    let granted = AuthorizationRequirement.grantedScopes(object, from: claim)
                    let want = wanted.filter { !granted.contains($0) }
                    #expect(
                        AuthorizationRequirement.missingScopes(wanted, object, from: claim) == want,
                        "\(text) \(claim) \(wanted)")
                }
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
