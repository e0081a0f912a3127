import Reactor

/// What the content stage of a built-in route (`OwnRoutes`) answers with: its response plus
/// what the chain before it added (the tightest limit's RateLimit fields), through the one
/// door; and the request's body, read whole first where the endpoint takes a form.
extension RoutedRequest {
    /// Answers with `response` and the chain's added fields, now or once the AS or the body
    /// has answered. `upstreamSeconds`: time spent waiting on the AS, logged apart.
    func answerOwn(_ response: GatewayResponse, upstreamSeconds: Double = 0) {
        var r = response
        r.headers += context.response.added
        services.answer(exchange, context, r, upstreamSeconds: upstreamSeconds)
    }

    /// `response` with the chain's added fields, for a stage that answers synchronously.
    func answering(_ response: GatewayResponse) -> StageOutcome {
        var r = response
        r.headers += context.response.added
        return .answer(r)
    }

    /// The request's body, whole; `WorkerServices.readOwnBody` answers instead when it cannot
    /// be had (413 past its limit, 408 or 400 when it does not arrive).
    func readOwnBody(then use: @escaping ([UInt8]) -> Void) {
        services.readOwnBody(exchange, context, then: use)
    }
}
