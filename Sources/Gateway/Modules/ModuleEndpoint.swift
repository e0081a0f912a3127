/// One of a module's own endpoints at a fixed path (a transmitter's push endpoint, the
/// authorization server's token endpoint): found before routing, as the login's are, and
/// answered by the content stage at the end of its built-in route's chain (`OwnRoutes`).
struct ModuleEndpoint: Sendable {
    /// The route the access log, the metrics and the span name.
    let name: String
    /// The built-in route it is on: the stages its chain has before the content.
    let route: ModuleRoute
    /// The content: answers the request, now or later (`.suspend`, then the one door).
    let answer: @Sendable (_ request: RoutedRequest, _ services: WorkerServices) -> StageOutcome
}

/// The built-in route a module's endpoint is on.
enum ModuleRoute: Hashable, Sendable {
    /// The browser's: `login.rate_limit` counts it, as it counts `/oauth2/start`.
    case browser
    /// One of the module's own (`GatewayModule.routes`), by its id.
    case own(String)
}
