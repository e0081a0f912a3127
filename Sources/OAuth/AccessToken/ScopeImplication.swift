/// A scope hierarchy an issuer's scopes follow (`issuers.NAME.scope_implies`): a broader
/// scope implies narrower ones (`mcp:admin` → `mcp:write` → `mcp:read`), so a token that holds
/// the broader one meets a rule that asks for a narrower one. MCP 2026-07-28: servers MUST
/// account for such hierarchies. Transitive; a cycle is refused when it is made.
public struct ScopeImplication: Sendable, Equatable {
    /// For each implied scope, every scope that implies it, directly or through others.
    public let impliedBy: [String: Set<String>]

    /// A cycle (`a` implies `b` implies `a`): no order of breadth, so no hierarchy.
    public struct Cycle: Error, Equatable {
        public let scope: String
    }

    /// `implies`: each scope to the narrower scopes it implies directly.
    public init(implies: [String: [String]]) throws(Cycle) {
        var impliedBy: [String: Set<String>] = [:]
        for broad in implies.keys.sorted() {
            // Every scope reachable from `broad` is implied by it.
            var seen: Set<String> = []
            var stack = implies[broad] ?? []
            while let narrow = stack.popLast() {
                if narrow == broad { throw Cycle(scope: broad) }
                guard seen.insert(narrow).inserted else { continue }
                impliedBy[narrow, default: []].insert(broad)
                stack += implies[narrow] ?? []
            }
        }
        self.impliedBy = impliedBy
    }

    /// `missing` without the scopes that `granted` holds a broader scope of.
    func stillMissing(_ missing: [String], granted: (String) -> Bool) -> [String] {
        missing.filter { wanted in !(impliedBy[wanted] ?? []).contains(where: granted) }
    }
}
