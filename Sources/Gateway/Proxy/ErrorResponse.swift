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
    /// RFC 6750 §3: the challenge in WWW-Authenticate, the same error in a JSON body.
    static func sendAuthError(_ req: ServerRequest, status: Int, challenge: Challenge, requestID: String, close: Bool) {
        req.responseHeaders.add("WWW-Authenticate", challenge.headerValue)
        send(req, status: status, error: challenge.error?.rawValue ?? "unauthorized",
             description: challenge.errorDescription ?? "authentication is required", requestID: requestID, close: close)
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
