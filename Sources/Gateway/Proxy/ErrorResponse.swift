import JOSE
import OAuth
import Reactor

/// Responses the gateway writes itself: a small JSON body with a stable `error` code, a
/// human `error_description` and the request id — never internals (those go to the log).
enum ErrorResponse {
    /// `detail` is for the access log (defaults to the description).
    static func make(
        _ status: Int, error: String, description: String, requestID: String, headers: [(String, String)] = [],
        detail: String? = nil
    ) -> GatewayResponse {
        let body =
            "{\"error\":\"\(error)\",\"error_description\":\"\(JSONText.escape(description))\",\"request_id\":\"\(JSONText.escape(requestID))\"}\n"
        var r = GatewayResponse(
            status: status, headers: headers, body: body, contentType: "application/json", detail: detail ?? description
        )
        r.problem = .init(error: error, description: description)
        return r
    }

    /// The client's body failed before anything was answered: past `max_body_size` is 413
    /// (RFC 9110 §15.5.14), too slow or silent too long 408 (§15.5.9), cut short 400.
    /// 502: what the upstream sent cannot go on (a handshake it did not complete, an answer
    /// that cannot be filtered or signed), and nothing of it has been sent.
    static func badGateway(_ description: String, _ requestID: String, detail: String) -> GatewayResponse {
        make(502, error: "bad_gateway", description: description, requestID: requestID, detail: detail)
    }

    /// 504: the upstream's answer did not come, or not whole, in time.
    static func gatewayTimeout(_ requestID: String, detail: String) -> GatewayResponse {
        make(
            504, error: "gateway_timeout", description: "the upstream did not answer in time", requestID: requestID,
            detail: detail)
    }

    /// The upstream could not be reached, answered badly, or not in time (`UpstreamFailure`):
    /// 502, or 504 for a timeout, while nothing of an answer has been sent.
    static func upstreamFailed(_ failure: UpstreamFailure, requestID: String) -> GatewayResponse {
        failure.isTimeout
            ? gatewayTimeout(requestID, detail: "\(failure)")
            : badGateway("the upstream could not be reached or answered badly", requestID, detail: "\(failure)")
    }

    static func clientBodyFailed(_ why: RequestBodyFailure, requestID: String) -> GatewayResponse {
        let tooLarge = why == .tooLarge
        return make(
            tooLarge ? 413 : why.isTimeout ? 408 : 400, error: "invalid_request",
            description: tooLarge
                ? "the request body is too large"
                : why.isTimeout ? "the request body came too slowly" : "the request body did not arrive whole",
            requestID: requestID, detail: "client body: \(why)")
    }

    /// 499 (nginx's "client closed request"): for the access log and metrics only, as the
    /// client that left reads nothing.
    static func clientGone(requestID: String, detail: String? = nil) -> GatewayResponse {
        make(
            499, error: "client_gone", description: "the client closed the connection", requestID: requestID,
            detail: detail)
    }

    /// RFC 6750 §3 / RFC 9449 §7.1: one WWW-Authenticate per challenge, the error of the
    /// one that carries it in a JSON body.
    static func auth(_ denial: AuthDenial, requestID: String) -> GatewayResponse {
        let primary = denial.primary
        return make(
            denial.status, error: primary?.error?.rawValue ?? "unauthorized",
            description: primary?.errorDescription ?? "authentication is required", requestID: requestID,
            headers: denial.challenges.map { ("WWW-Authenticate", $0.headerValue) } + denial.headers,
            detail: denial.detail)
    }
}

/// JSON string escaping for the error bodies, built as `String`s: the escaping itself is
/// JOSE's serializer's. (Log lines are written as bytes, by `JSONText`'s writers.)
extension JSONText {
    static func escape(_ s: String) -> String {
        var plain = true
        for c in s.utf8 where c < 0x20 || c == 0x22 || c == 0x5c {
            plain = false
            break
        }
        if plain { return s }
        let q = JSONSerializer.quoted(s)
        return String(q.dropFirst().dropLast())
    }
}
