import Reactor

/// The gateway's refusals to a gRPC or gRPC-Web call (`GRPCCall`), in the form gRPC and
/// Envoy answer one: trailers-only, HTTP 200, the status as `grpc-status`, the JSON body's
/// `error_description` as `grpc-message` (never internals: the log has those), and the
/// answer's own fields (`WWW-Authenticate`, `DPoP-Nonce`, `Retry-After`, `Allow`) kept in
/// the same head, where a client reads them as metadata. A gRPC client reads no JSON or
/// HTML body and takes any status but 200 as a broken call (UNKNOWN or INTERNAL), losing
/// the challenge a retry needs.
extension GatewayResponse {
    /// Whether `call`'s answer is this response's gRPC form: refusals only. A 2xx or 3xx
    /// the gateway writes itself (a CORS preflight's, a status page) is no call's failure
    /// and keeps its form.
    var isGRPCRefusal: Bool { status >= 400 }

    /// What `grpc-message` says: the description the JSON body would carry, else the
    /// page's message, else the status's reason phrase.
    var grpcMessage: String {
        if let problem { return problem.description }
        if case .message(_, let message, _) = page { return message }
        return HTTPStatus.reason(status)
    }

    /// Writes the trailers-only form through `responder` (which answers exactly once).
    func sendGRPC(_ call: GRPCCall, _ responder: Responder, requestID: String?, close: Bool) {
        for (name, value) in headers { responder.fields.append(name, value) }
        for (name, value) in GRPCTrailersOnly.fields(call, refusal: status, message: grpcMessage) {
            responder.fields.append(name, value)
        }
        if let requestID { responder.lastField = ("X-Request-Id", requestID) }
        responder.respond(status: 200, close: close, trailersOnly: true)
    }
}
