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
/// log lines), where a full encoder would cost more than the line.
enum JSONText {
    static func escape(_ s: String) -> String {
        var needs = false
        for c in s.utf8 where c < 0x20 || c == 0x22 || c == 0x5c { needs = true; break }
        if !needs { return s }
        var out = ""
        out.reserveCapacity(s.utf8.count + 8)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
