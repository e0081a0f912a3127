import Reactor

/// A response the gateway writes itself (login endpoints, redirects, pages).
struct GatewayResponse {
    var status: Int
    var headers: [(String, String)] = []
    var body: String = ""
    var contentType = "text/html; charset=utf-8"
    /// For the access log: what happened, never a secret.
    var detail: String? = nil

    static func redirect(_ location: String, cookies: [String] = [], detail: String? = nil) -> GatewayResponse {
        GatewayResponse(status: 302, headers: [("Location", location)] + cookies.map { ("Set-Cookie", $0) }, detail: detail)
    }

    static func page(_ status: Int, title: String, message: String, link: (text: String, href: String)? = nil,
                     cookies: [String] = [], detail: String? = nil) -> GatewayResponse {
        GatewayResponse(status: status, headers: cookies.map { ("Set-Cookie", $0) },
                        body: LoginPages.page(title: title, message: message, link: link), detail: detail)
    }

    func send(_ req: ServerRequest, requestID: String, close: Bool) {
        let h = req.responseHeaders
        for (name, value) in headers { h.add(name, value) }
        if status != 302 || !body.isEmpty { h.add("Content-Type", contentType) }
        // Login pages and redirects carry one-time values: never cached anywhere.
        h.add("Cache-Control", "no-store")
        h.add("X-Request-Id", requestID)
        if contentType.hasPrefix("text/html") {
            // No scripts, no framing. (No form-action: browsers apply it to the redirect after
            // the logout form's POST, which must reach the AS's end_session_endpoint.)
            h.add("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
            h.add("X-Content-Type-Options", "nosniff")
            h.add("Referrer-Policy", "no-referrer")
        }
        if close { h.add("Connection", "close") }
        req.respond(status: status, body: body.isEmpty ? nil : OwnedBuffer(body))
    }
}

/// The few HTML pages the gateway shows itself: plain, no scripts, every value escaped.
enum LoginPages {
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func page(title: String, message: String, link: (text: String, href: String)?, form: String = "") -> String {
        let a = link.map { "<p><a href=\"\(escape($0.href))\">\(escape($0.text))</a></p>" } ?? ""
        return """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
        <style>body{font-family:sans-serif;max-width:36em;margin:4em auto;padding:0 1em}</style></head>
        <body><h1>\(escape(title))</h1><p>\(escape(message))</p>\(form)\(a)</body></html>
        """
    }

    /// The logout confirmation: a same-origin POST form carrying the CSRF token.
    static func logoutConfirmation(action: String, token: String) -> String {
        let form = "<form method=\"post\" action=\"\(escape(action))\"><input type=\"hidden\" name=\"token\" value=\"\(escape(token))\">"
            + "<button type=\"submit\" id=\"logout\">Log out</button></form>"
        return page(title: "Log out", message: "Do you want to log out?", link: nil, form: form)
    }
}
