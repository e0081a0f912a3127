/// Where a module's stage runs in a proxied request's chain.
enum StagePosition: Sendable {
    /// After the upgrade check, before the route's authentication: what must not wait for a
    /// signature check (a limit per client address).
    case beforeAuthentication
    /// Once the request is admitted, before the route's MCP and token exchange stages: what
    /// needs the caller (a limit per caller, a policy decision).
    case afterAuthentication
    /// Last before the upstream request is made.
    case beforeUpstream
    /// Once the body is read whole (`RequestBufferingStage`), before the upstream queue: what
    /// must see the body before the upstream does (a signed request's `Content-Digest`).
    /// Proxied chains only: a decision has no body.
    case afterBody
}

/// A stage a module brings (`GatewayModule.stages`): its place in the chain, and how a route's
/// plan makes it (nil: not on this route).
protocol ModuleStage: Stage {
    static var position: StagePosition { get }
    /// Every place it may run (a stage whose parts count at different times); `[position]`
    /// unless it says otherwise.
    static var positions: [StagePosition] { get }
    /// In decision chains too (nothing goes upstream there); else in proxied chains only.
    static var judgesDecisions: Bool { get }
    /// This route's stage; nil when the route does not set the key.
    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> Self?
    /// This route's stage at `position`; `make(_:_:)` unless the stage runs at several.
    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition) -> Self?
    /// This route's stage at `position` in a decision's chain (`decision`) or a proxied one;
    /// the same stage unless it judges a decision differently.
    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition, decision: Bool)
        -> (any Stage)?
}

/// A module's stage that a route turns on with a key of its own, declared in the stage's file:
/// its row of the route key table (name, reference text, reader into `RouteOptions.settings`
/// under its own `RouteSettingKey`). Adding one touches its file, its module's `stages`
/// (`GatewayModule`) and its row in docs/configuration.md.
protocol KeyedStage: ModuleStage {
    static var routeKey: ConfigKey<RouteConfig, RouteKeyContext> { get }
}

extension ModuleStage {
    static var judgesDecisions: Bool { true }
    static var positions: [StagePosition] { [position] }
    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition) -> Self? {
        make(plan, services)
    }
    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition, decision: Bool)
        -> (any Stage)?
    {
        make(plan, services, at: position)
    }
}
