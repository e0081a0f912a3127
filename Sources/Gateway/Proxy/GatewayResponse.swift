import Reactor

/// A response the gateway writes itself (errors, login endpoints, redirects, pages, admin
/// answers): every such answer is one of these, sent through `WorkerServices.answer`.
struct GatewayResponse {
    var status: Int
    var headers: [(String, String)] = []
    var body: String = ""
    var contentType = "text/html; charset=utf-8"
    /// For the access log: what happened, never a secret.
    var detail: String? = nil
    /// For the access log's `reason`: a stable code for why (a failure kind's `code`).
    var reason: String? = nil
    /// Login pages and redirects carry one-time values: never cached anywhere.
    var noStore = true
    /// A page still to render from the configured template (`Pages.finish`, with the request id).
    var page: PageContent? = nil
    /// An error answer's code and description (`ErrorResponse`), for its HTML form.
    var problem: Problem? = nil
    /// A page's `Referrer-Policy`. A page whose form's POST checks `Origin` says `same-origin`:
    /// under `no-referrer` a browser sends `Origin: null` with it.
    var referrerPolicy = "no-referrer"

    struct Problem: Sendable {
        var error: String
        var description: String
    }

    static func redirect(_ location: String, cookies: [String] = [], detail: String? = nil) -> GatewayResponse {
        GatewayResponse(
            status: 302, headers: [("Location", location)] + cookies.map { ("Set-Cookie", $0) }, detail: detail)
    }

    static func page(
        _ status: Int, title: String, message: String, link: (text: String, href: String)? = nil,
        cookies: [String] = [], detail: String? = nil
    ) -> GatewayResponse {
        GatewayResponse(
            status: status, headers: cookies.map { ("Set-Cookie", $0) },
            body: LoginPages.page(title: title, message: message, link: link), detail: detail,
            page: .message(title: title, message: message, link: link.map { PageLink(text: $0.text, href: $0.href) }))
    }

    /// A page that also carries a `problem` in the JSON error form (`ErrorResponse`), for a
    /// client that will not show HTML (an API call, a script): its headers (Retry-After,
    /// Set-Cookie) and log fields are kept.
    func jsonForm(requestID: String) -> GatewayResponse {
        guard let problem else { return self }
        var r = ErrorResponse.make(
            status, error: problem.error, description: problem.description, requestID: requestID, headers: headers,
            detail: detail)
        r.reason = reason
        return r
    }

    /// Writes it through `responder` (which answers exactly once; to a gone client, nothing).
    func send(_ responder: Responder, requestID: String?, close: Bool) {
        forEachField { responder.fields.append($0, $1) }
        if let requestID { responder.lastField = ("X-Request-Id", requestID) }
        responder.respond(status: status, body: Array(body.utf8), close: close)
    }

    /// Every field the answer carries but the request id: its own `headers`, then its
    /// content type, caching and, for a page, the security fields. (An ext_authz `Check`
    /// hands the same to Envoy, which answers the client with them.)
    func forEachField(_ visit: (String, String) -> Void) {
        for (name, value) in headers { visit(name, value) }
        if status != 302 || !body.isEmpty { visit("Content-Type", contentType) }
        if noStore { visit("Cache-Control", "no-store") }
        if contentType.hasPrefix("text/html") {
            // No scripts, no framing. (No form-action: browsers apply it to the redirect after
            // the logout form's POST, which must reach the AS's end_session_endpoint.)
            visit("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
            visit("X-Content-Type-Options", "nosniff")
            // The same for browsers that predate frame-ancestors.
            visit("X-Frame-Options", "DENY")
            visit("Referrer-Policy", referrerPolicy)
        }
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
        let form =
            "<form method=\"post\" action=\"\(escape(action))\"><input type=\"hidden\" name=\"token\" value=\"\(escape(token))\">"
            + "<button type=\"submit\" id=\"logout\">Log out</button></form>"
        return page(title: "Log out", message: "Do you want to log out?", link: nil, form: form)
    }
}
