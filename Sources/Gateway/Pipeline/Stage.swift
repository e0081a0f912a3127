import Reactor

/// One step of a routed request's way to its upstream (or to its verdict): it reads the
/// request's state and the worker's services it was made with, and says what happens next.
/// A route's plan lists its stages, made once when a config is applied (`RoutePlan`); a new
/// capability is a new stage named in the plan, not an edit of the others. The shape is
/// Envoy's filter chain (`StopIteration`, then `continueDecoding()`) and nginx's phase
/// handlers (`ngx_http_core_run_phases`).
protocol Stage: AnyObject {
    /// Runs on the loop thread, once per request that reaches it.
    func run(_ request: RoutedRequest) -> StageOutcome
}

/// A stage as a chain lists it: not counted, so that running a chain costs no reference
/// count per stage. The plan that lists it owns the stage (`RoutePlan`), and a request in its
/// chain holds the plan.
struct StageLink {
    unowned(unsafe) let stage: any Stage
}

/// What a stage decides.
enum StageOutcome {
    /// The next stage runs now.
    case proceed
    /// The request is answered with this; no later stage runs.
    /// (Indirect: the outcome stays a word wide for the stages that go on.)
    indirect case answer(GatewayResponse, close: Bool = false)
    /// The stage keeps the request and later calls `request.resume()` (the next stage runs)
    /// or `request.answer(_:)` — after a key fetch, the store, the AS, or the body.
    case suspend
}
