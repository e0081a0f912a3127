import Foundation
import Testing

@testable import Gateway

/// A login step that cannot be done now (the AS or the store down): 503 with Retry-After
/// (RFC 9110 §10.2.3), a page whose "Try again" repeats the step for a browser, the JSON
/// error form for any other client, and the dependency's error only in the log's detail.
@Suite("Sign-in unavailable: the page, its retry, its JSON form")
struct UnavailablePageTests {
    static let internals = "token endpoint: unreachable: Failed to connect to idp-internal.example port 8443"

    @Test func aBrowserGetsAPageWithTheRetryLinkEscaped() {
        let r = LoginService.unavailable(
            Self.internals, reason: "token_endpoint_unreachable", retry: "/oauth2/callback?code=\"><b>&state=s")
        let page = Pages().finish(r, requestID: "req1")
        #expect(page.status == 503 && page.contentType.hasPrefix("text/html"))
        #expect(page.headers.contains { $0 == ("Retry-After", "5") })
        #expect(page.body.contains("<a href=\"/oauth2/callback?code=&quot;&gt;&lt;b&gt;&amp;state=s\">Try again</a>"))
        #expect(!page.body.contains("idp-internal") && !page.body.contains("<b>"))
        #expect(page.detail == Self.internals && page.reason == "token_endpoint_unreachable")
    }

    @Test func anAPIClientGetsTheJSONFormWithItsHeaders() throws {
        var r = LoginService.unavailable(Self.internals, reason: "par_failed", retry: "/oauth2/start?rd=%2F")
        r.headers.append(("Set-Cookie", "tokengate_login=; Max-Age=0"))
        let json = r.jsonForm(requestID: "req2")
        #expect(json.status == 503 && json.contentType == "application/json" && json.page == nil)
        #expect(json.headers.contains { $0 == ("Retry-After", "5") })
        #expect(json.headers.contains { $0 == ("Set-Cookie", "tokengate_login=; Max-Age=0") })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: String])
        #expect(body["error"] == "temporarily_unavailable" && body["request_id"] == "req2")
        #expect(!json.body.contains("idp-internal"))
        #expect(json.detail == Self.internals && json.reason == "par_failed")
        // Rendering it as a page afterwards changes nothing: it carries no page any more.
        #expect(Pages().finish(json, requestID: "req2").body == json.body)
    }

    @Test func aPageWithoutAProblemHasNoJSONForm() {
        let r = GatewayResponse.page(400, title: "Sign-in failed", message: "The sign-in response was not valid.")
        #expect(r.jsonForm(requestID: "req3").body == r.body)
    }
}
