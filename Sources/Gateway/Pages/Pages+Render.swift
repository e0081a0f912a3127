import Reactor

/// What a gateway page says, kept with the response until it is written: the page is rendered
/// from the configured template then, with the request id.
enum PageContent: Sendable {
    case message(title: String, message: String, link: PageLink?)
    case logoutConfirmation(action: String, token: String)
}

struct PageLink: Sendable {
    var text: String
    var href: String
}

extension Pages {
    /// A browser that will show the answer as a page: a navigation (`Sec-Fetch-Mode:
    /// navigate`), or an `Accept` that names text/html. Scripts (XHR, fetch: another
    /// Sec-Fetch-Mode, or X-Requested-With) and API clients keep the JSON error body.
    static func wantsHTML(_ head: HTTPRequestHead) -> Bool {
        let h = head.fields
        if h.first("X-Requested-With")?.lowercased() == "xmlhttprequest" { return false }
        if let mode = h.first("Sec-Fetch-Mode") { return mode == "navigate" }
        return h.first("Accept")?.lowercased().contains("text/html") ?? false
    }

    /// `response` with its page rendered, when it carries one.
    func finish(_ response: GatewayResponse, requestID: String) -> GatewayResponse {
        guard let page = response.page else { return response }
        var r = response
        r.contentType = "text/html; charset=utf-8"
        switch page {
        case .message(let title, let message, let link):
            r.body = template(Self.error).render([
                "status": String(r.status), "title": title, "message": message, "request_id": requestID,
                "error": "", "error_description": message,
                "link_href": link?.href ?? "/", "link_text": link?.text ?? "Home"
            ])
        case .logoutConfirmation(let action, let token):
            r.body = template(Self.logout).render([
                "logout_action": action, "csrf_token": token, "request_id": requestID
            ])
        }
        return r
    }

    /// A JSON error answer (`ErrorResponse`) as the error page, for a browser.
    /// `link`: where the page points (the home page unless said).
    func errorPage(_ json: GatewayResponse, title: String, requestID: String, link: PageLink? = nil) -> GatewayResponse
    {
        var r = json
        r.contentType = "text/html; charset=utf-8"
        r.body = template(Self.error).render([
            "status": String(json.status), "title": title, "message": json.problem?.description ?? "",
            "error": json.problem?.error ?? "",
            "error_description": json.problem?.description ?? "", "request_id": requestID,
            "link_href": link?.href ?? "/", "link_text": link?.text ?? "Home"
        ])
        return r
    }

    /// The 403 page: the logout form lets the user sign in as someone else.
    func forbiddenPage(_ json: GatewayResponse, requestID: String, logoutAction: String, csrfToken: String)
        -> GatewayResponse
    {
        var r = json
        r.contentType = "text/html; charset=utf-8"
        r.body = template(Self.forbidden).render([
            "status": String(json.status), "error": json.problem?.error ?? "",
            "error_description": json.problem?.description ?? "",
            "request_id": requestID, "logout_action": logoutAction, "csrf_token": csrfToken
        ])
        return r
    }

    /// The login choice: one `choice.html` per client (escaped), inside `choose.html`.
    func choosePage(clients: [String], href: (String) -> String, requestID: String) -> String {
        let item = template(Self.choice)
        let items = clients.map { item.render(["client": $0, "href": href($0)]) }.joined()
        return template(Self.choose).render(["request_id": requestID], markup: ["choices": .init(html: items)])
    }
}
