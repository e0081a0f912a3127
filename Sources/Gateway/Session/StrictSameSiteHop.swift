/// `session.same_site: strict` and the way back from the AS. The callback is reached by a
/// redirect from the AS's site, and a browser sends no SameSite=Strict cookie on any request
/// of a navigation that another site started — redirects included (RFC 6265bis §5.2.1,
/// "site for cookies" of a redirect chain). A plain 302 from the callback to the page would
/// arrive without the new session cookie, start another login, and loop. So with `strict`
/// the callback answers a small page that navigates on its own (meta refresh): that
/// navigation starts on the gateway's own site, and the Strict cookie goes with it.
extension GatewayResponse {
    func strictSameSiteHop() -> GatewayResponse {
        guard status == 302, let location = headers.first(where: { $0.0 == "Location" })?.1 else { return self }
        var r = self
        r.status = 200
        r.headers.removeAll { $0.0 == "Location" }
        let href = LoginPages.escape(location)
        r.body = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=\(href)">
            <title>Signed in</title></head><body><p><a href="\(href)">Continue</a></p></body></html>
            """
        r.contentType = "text/html; charset=utf-8"
        return r
    }
}
