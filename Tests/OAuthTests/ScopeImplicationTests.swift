import JOSE
import Testing

@testable import OAuth

/// MCP 2026-07-28: a broader scope implies narrower ones. From the caller's side: what a
/// broader scope meets, what it does not, and the hierarchies that cannot be made.
@Suite("Scope hierarchies (scope_implies)")
struct ScopeImplicationTests {
    static let hierarchy = try! ScopeImplication(implies: [
        "mcp:admin": ["mcp:write"], "mcp:write": ["mcp:read"], "files:admin": ["files:read", "files:write"]
    ])

    func check(_ required: [String], granted: String, _ implication: ScopeImplication? = hierarchy)
        -> AuthorizationRequirement.Failure?
    {
        AuthorizationRequirement(scopes: required).check(
            JSONObject(["scope": .string(granted)]), implication: implication)
    }

    @Test func aBroaderScopeMeetsANarrowerOneTransitively() {
        #expect(check(["mcp:read"], granted: "mcp:admin") == nil)
        #expect(check(["mcp:read"], granted: "mcp:write") == nil)
        #expect(check(["mcp:write", "files:read"], granted: "mcp:admin files:admin") == nil)
        #expect(Self.hierarchy.impliedBy["mcp:read"] == ["mcp:write", "mcp:admin"])
    }

    @Test func aNarrowerScopeNeverMeetsABroaderOne() {
        #expect(check(["mcp:admin"], granted: "mcp:read mcp:write") == .missingScopes(["mcp:admin"]))
        #expect(check(["files:admin"], granted: "files:read files:write") == .missingScopes(["files:admin"]))
        // Without the issuer's hierarchy nothing is implied.
        #expect(check(["mcp:read"], granted: "mcp:admin", nil) == .missingScopes(["mcp:read"]))
        // Names are compared whole: a prefix implies nothing.
        #expect(check(["mcp:read"], granted: "mcp:adm") == .missingScopes(["mcp:read"]))
    }

    @Test func anyOfAlternativesFollowTheHierarchyToo() {
        var requirement = AuthorizationRequirement()
        requirement.anyOf = [
            AuthorizationRequirement(scopes: ["files:write"]), AuthorizationRequirement(scopes: ["mcp:read"])
        ]
        #expect(
            requirement.check(JSONObject(["scope": .string("mcp:write")]), implication: Self.hierarchy) == nil)
    }

    @Test func aCycleIsRefused() {
        #expect(throws: ScopeImplication.Cycle.self) { try ScopeImplication(implies: ["a": ["b"], "b": ["a"]]) }
        #expect(throws: ScopeImplication.Cycle.self) { try ScopeImplication(implies: ["a": ["a"]]) }
        #expect(throws: ScopeImplication.Cycle.self) {
            try ScopeImplication(implies: ["a": ["b"], "b": ["c"], "c": ["a"]])
        }
        #expect((try? ScopeImplication(implies: ["a": ["b", "c"], "b": ["c"]])) != nil, "a diamond is no cycle")
    }
}
