import JOSE
import OAuth
import Reactor

/// Responses the gateway writes itself: a small JSON body with a stable `error` code, a
/// human `error_description` and the request id — never internals (those go to the log).
enum ErrorResponse {
    static func send(_ req: ServerRequest, status: Int, error: String, description: String, requestID: String, close: Bool = false) {
        let h = req.responseHeaders
        h.add("Content-Type", "application/json")
        h.add("Cache-Control", "no-store")
        h.add("X-Request-Id", requestID)
        if close { h.add("Connection", "close") }
        let body = "{\"error\":\"\(error)\",\"error_description\":\"\(JSONText.escape(description))\",\"request_id\":\"\(JSONText.escape(requestID))\"}\n"
        req.respond(status: status, body: OwnedBuffer(body))
    }
}

extension ErrorResponse {
    /// RFC 6750 §3 / RFC 9449 §7.1: one WWW-Authenticate per challenge, the error of the
    /// one that carries it in a JSON body.
    static func sendAuthError(_ req: ServerRequest, denial: AuthDenial, requestID: String, close: Bool) {
        for c in denial.challenges { req.responseHeaders.add("WWW-Authenticate", c.headerValue) }
        for (name, value) in denial.headers { req.responseHeaders.add(name, value) }
        let primary = denial.primary
        send(req, status: denial.status, error: primary?.error?.rawValue ?? "unauthorized",
             description: primary?.errorDescription ?? "authentication is required", requestID: requestID, close: close)
    }
}

/// JSON string escaping for the few JSON texts the gateway builds by hand (error bodies,
/// log lines), where a full encoder would cost more than the line. The escaping itself is
/// JOSE's serializer's.
enum JSONText {
    static func escape(_ s: String) -> String {
        var plain = true
        for c in s.utf8 where c < 0x20 || c == 0x22 || c == 0x5c { plain = false; break }
        if plain { return s }
        let q = JSONSerializer.quoted(s)
        return String(q.dropFirst().dropLast())
    }
}
