import Reactor

/// A gRPC call's `grpc-timeout`, checked before its body is read or its upstream hears of it.
/// A value gRPC does not allow (a sign, letters, more than 8 digits, a second header) is
/// refused as gRPC servers refuse it: 400, which a gRPC call hears as INTERNAL (gRPC's
/// HTTP-to-gRPC mapping). A valid one is capped by the route's upstream `timeout`, as Envoy's
/// `max_grpc_timeout` caps it: the upstream then hears the deadline the gateway keeps, and
/// the call ends at it (DEADLINE_EXCEEDED). Another request's `grpc-timeout` means nothing to
/// the gateway and passes as any field.
final class GRPCDeadlineStage: Stage {
    /// The route's upstream `timeout`: the longest deadline a call goes upstream with.
    let cap: Double

    init(plan: RoutePlan) {
        // A plan with a pool has its upstream; without one, nothing goes upstream to cap.
        cap = plan.upstream?.config.timeout ?? .infinity
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let fields = request.exchange.head.fields
        let (value, count) = fields.firstAndCount("grpc-timeout")
        guard count > 0, GRPCCall(fields) != nil else { return .proceed }
        guard count == 1, let value, let asked = GRPCTimeout.seconds(value) else {
            return .answer(
                ErrorResponse.make(
                    400, error: "invalid_request", description: "the grpc-timeout header is malformed",
                    requestID: request.context.requestID,
                    detail: count == 1
                        ? "grpc-timeout \(value.map { String($0.prefix(32)) } ?? "")" : "grpc-timeout twice"
                ))
        }
        request.context.state[GRPCDeadline.Key.self] =
            asked <= cap
            ? GRPCDeadline(seconds: asked, value: value) : GRPCDeadline(seconds: cap, value: GRPCTimeout.value(cap))
        return .proceed
    }
}

/// A gRPC call's deadline as the gateway keeps it, in the request's state: the client's
/// `grpc-timeout`, capped by the upstream's `timeout`; `value` is what the upstream hears.
final class GRPCDeadline {
    enum Key: RequestStateKey { typealias Value = GRPCDeadline }
    let seconds: Double
    let value: String

    init(seconds: Double, value: String) {
        self.seconds = seconds
        self.value = value
    }
}
