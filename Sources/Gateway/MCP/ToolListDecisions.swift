import JOSE

/// On an MCP route with `authorize`: the PDP's answers about the tools a `tools/list`
/// answer names, asked in one `access/v1/evaluations` call (AuthZEN §7) when that answer is
/// read, so the caller sees only the tools the PDP lets it call. Each question is the
/// request's subject and context, the action `tools/call` and the resource `{type:
/// "mcp_tool", id: NAME, properties: {route}}`; a tool the PDP does not allow, and every
/// tool when the PDP gives no usable answer, is left out. Loop-thread only.
final class ToolListDecisions {
    enum State {
        case unasked
        case asking
        /// The tools the PDP allows.
        case decided(Set<String>)
    }

    private(set) var state = State.unasked
    private let ask: (_ names: [String], _ done: @escaping (Set<String>) -> Void) -> Void

    init(ask: @escaping (_ names: [String], _ done: @escaping (Set<String>) -> Void) -> Void) {
        self.ask = ask
    }

    /// Whether the PDP allows `name`; false until it has answered.
    func allows(_ name: String) -> Bool {
        if case .decided(let allowed) = state { return allowed.contains(name) }
        return false
    }

    var isDecided: Bool {
        if case .decided = state { return true }
        return false
    }

    /// Asks about `names` once; `done` runs on the loop when the answers are in (at once when
    /// they already are).
    func decide(_ names: [String], done: @escaping () -> Void) {
        switch state {
        case .decided: done()
        case .asking: preconditionFailure("one question per tools/list answer")
        case .unasked:
            state = .asking
            ask(Array(Set(names)).sorted()) { [self] allowed in
                state = .decided(allowed)
                done()
            }
        }
    }
}

extension PolicyDecisionPoints {
    /// The `ToolListDecisions` of a `tools/list` by `first`'s subject and context, on
    /// `route`: any answer but a usable batch allows no tool.
    func toolListDecisions(_ authorizer: AuthorizerConfig, _ first: AuthZENEvaluation, route: String, requestID: String)
        -> ToolListDecisions
    {
        ToolListDecisions { [self] names, done in
            guard !names.isEmpty else { return done([]) }
            let resources = names.map { name in
                JSONObject([
                    "type": .string("mcp_tool"), "id": .string(name),
                    "properties": .object(JSONObject(["route": .string(route)]))
                ])
            }
            evaluateAll(authorizer, first, resources: resources, requestID: requestID) { result in
                switch result {
                case .success(let decisions):
                    done(Set(zip(names, decisions).compactMap { $1.allowed ? $0 : nil }))
                case .failure:
                    done([])
                }
            }
        }
    }
}
