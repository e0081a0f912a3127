import OAuth

/// An MCP route's rules (`mcp:` on a `bearer`, `dpop` or `token` route): what a call needs
/// beyond the route's own `require`, by method and by the tool, resource or prompt it names.
/// The route's requirement admits the request first; these rules then judge the JSON-RPC
/// message in its body (`MCPMessage`), before the upstream hears of it.
struct MCPRules: Sendable {
    /// The most of a POST body the gateway reads to judge it (`max_request_bytes`); past it 413.
    var maxRequestBytes = 1 << 20
    /// The most of a `tools/list` answer held whole to filter it (`max_response_bytes`), and
    /// of one event of an SSE answer; past it the answer is refused, never passed unfiltered.
    var maxResponseBytes = 4 << 20
    /// Whether a tool, resource or prompt that no rule names may be called (`default: allow`)
    /// or is refused (`default: deny`). Methods are not affected: an unlisted method needs
    /// only the route's requirement (`initialize`, `ping` and notifications must pass).
    var allowsUnlisted = true
    /// The MCP revisions a request may speak (`protocol_versions`): the others are refused
    /// with `-32022` (MCPProtocolVersion).
    var protocolVersions = MCPProtocolVersion.known
    /// How long a `subscriptions/listen` stream (MCP 2026-07-28) may stay open
    /// (`listen_timeout`), in place of the upstream's `timeout` on its silences; it also ends
    /// when the caller's token expires (MCPListen).
    var listenTimeout = 3600.0
    /// Origins of other sites a browser may call the route from (`allowed_origins`), beside
    /// the route's own (MCPOrigin).
    var allowedOrigins: [String] = []
    var methods: [String: AuthorizationRequirement] = [:]
    var tools: [String: AuthorizationRequirement] = [:]
    var resources: [String: AuthorizationRequirement] = [:]
    var prompts: [String: AuthorizationRequirement] = [:]

    /// Whether callers may be answered differently: a rule names a tool, resource or prompt,
    /// or `default: deny` hides the unnamed ones. Then every cacheable result is this caller's
    /// (`cacheScope: "private"`, SEP-2549).
    var differsByCaller: Bool { !tools.isEmpty || !resources.isEmpty || !prompts.isEmpty || !allowsUnlisted }

    /// What a message needs: its method's rule and its target's (either may be none), or
    /// why it is refused whatever the token holds. No array: asked on every call.
    enum Verdict: Equatable {
        case check(method: AuthorizationRequirement?, target: AuthorizationRequirement?)
        case notAllowed(MCPTarget)
    }

    func verdict(for message: MCPMessage) -> Verdict {
        // An empty table is not hashed into: asked on every call.
        let methodRule = methods.isEmpty ? nil : message.method.flatMap { methods[$0] }
        guard let target = message.target else { return .check(method: methodRule, target: nil) }
        let rule = rule(of: target)
        guard rule != nil || allowsUnlisted else { return .notAllowed(target) }
        return .check(method: methodRule, target: rule)
    }

    /// The rule that names `target`; nil when none does.
    func rule(of target: MCPTarget) -> AuthorizationRequirement? {
        switch target {
        case .tool(let name): tools.isEmpty ? nil : tools[name]
        case .resource(let uri):
            // Both normalized (ResourceURI). A rule on a URI without a query covers it with any
            // query: a server that reads the resource by its path ignores one.
            resources[uri] ?? uri.firstIndex(of: "?").flatMap { resources[String(uri[..<$0])] }
        case .prompt(let name): prompts.isEmpty ? nil : prompts[name]
        }
    }

    /// Every rule, methods first, each table by name: with the route's requirement, where
    /// the Protected Resource Metadata's `scopes_supported` comes from (RFC 9728 §2).
    var allRequirements: [AuthorizationRequirement] {
        [methods, tools, resources, prompts].flatMap { table in table.sorted { $0.key < $1.key }.map(\.value) }
    }
}

extension MCPRules {
    /// Whether a token may make a call: the one check a `tools/call` is judged by and a
    /// `tools/list` answer is filtered by (MCPStage), so a caller sees only what it may call.
    enum Check {
        case passes
        /// `default: deny` and no rule names the target.
        case notListed
        /// A requirement the token does not meet (or no token to meet it): `needs` are all
        /// the call's requirements, for the scopes a step-up asks for; `reason` for the log.
        case fails(needs: [AuthorizationRequirement], reason: String)
    }

    func check(_ message: MCPMessage, token: VerifiedAccessToken?) -> Check {
        // The verdict holds two requirements, each one box: no array on the way to a pass.
        guard case .check(let methodRule, let targetRule) = verdict(for: message) else { return .notListed }
        guard methodRule != nil || targetRule != nil else { return .passes }
        let needs = { [methodRule, targetRule].compactMap { $0 } }
        guard let token else { return .fails(needs: needs(), reason: "no token") }
        // Each in turn, the method's first.
        func failure(_ requirement: AuthorizationRequirement?) -> AuthorizationRequirement.Failure? {
            requirement?.check(
                token.claims, scopeClaim: token.scopeClaim, roleClaims: token.roleClaims, issuer: token.issuer,
                implication: token.scopeImplication)
        }
        if let failure = failure(methodRule) ?? failure(targetRule) {
            return .fails(needs: needs(), reason: failure.description)
        }
        return .passes
    }

    /// Whether `tools/call` of the tool `name` would pass for `token`.
    func mayCallTool(_ name: String, token: VerifiedAccessToken?) -> Bool {
        if case .passes = check(MCPMessage(kind: .call(method: "tools/call"), target: .tool(name)), token: token) {
            return true
        }
        return false
    }
}
