import Foundation
import JOSE
import OAuth

/// What the consent page carries to its POST: the checked authorization request, the scopes
/// the user may be granted, and the session it was shown to, sealed with `session.keys`
/// under a purpose of its own and good for 10 minutes. It is the page's CSRF token: only this
/// gateway can make one, and the POST is taken only from the session it names (a page shown
/// to an attacker's session cannot be posted from the victim's).
struct ConsentTicket: Equatable {
    var request: AuthorizationRequest
    var scopes: [String]
    var sessionID: String
    var expiresAt: Int64
    /// Its own id: a ticket is posted once (the replay store).
    var id = Base64URL.encode(SecureRandom.bytes(16))

    static let purpose = "as-consent-ticket"
    static let lifetime: Int64 = 600

    func sealed(by sealer: CookieSealer) -> String {
        var o = JSONObject([
            "c": .string(request.clientID.text), "r": .string(request.redirectURI),
            "p": .string(request.codeChallenge), "a": .string(request.resource),
            "s": .array(scopes.map { .string($0) }), "i": .string(sessionID), "e": .number(String(expiresAt)),
            "n": .string(id)
        ])
        if let state = request.state { o["t"] = .string(state) }
        if let jkt = request.dpopJKT { o["j"] = .string(jkt) }
        return sealer.seal(Array(JSONSerializer.serialize(.object(o)).utf8), purpose: Self.purpose)
    }

    /// The ticket, if this gateway sealed it and it has not expired.
    static func open(_ text: String, with sealer: CookieSealer, resources: Set<String>, now: Int64) -> ConsentTicket? {
        guard let plain = sealer.open(text, purpose: purpose), let o = (try? JSONParser.parse(plain))?.object,
            let client = o["c"]?.string, let redirect = o["r"]?.string, let challenge = o["p"]?.string,
            let resource = o["a"]?.string, let scopes = o["s"]?.array?.compactMap(\.string),
            let session = o["i"]?.string, let expires = o["e"]?.int64, let id = o["n"]?.string, now < expires
        else { return nil }
        var pairs = [
            ("client_id", client), ("redirect_uri", redirect), ("response_type", "code"),
            ("code_challenge", challenge), ("code_challenge_method", "S256"), ("resource", resource)
        ]
        if let state = o["t"]?.string { pairs.append(("state", state)) }
        if let jkt = o["j"]?.string { pairs.append(("dpop_jkt", jkt)) }
        // Read again as a request: a resource this AS no longer serves (a reload) is refused.
        guard case .success(let target) = AuthorizationRequest.target(pairs),
            let request = try? AuthorizationRequest(target, resources: resources)
        else { return nil }
        return ConsentTicket(request: request, scopes: scopes, sessionID: session, expiresAt: expires, id: id)
    }
}

/// The consent page (MCP authorization, "Confused deputy"; RFC 9700 §4.1.x's advice for
/// consent): who asks (the client's name, and the host of its metadata document, which is
/// what vouches for it), where the browser will be sent (the redirect URI's host), the
/// resource and the scopes. Plain HTML, no script, not frameable (`GatewayResponse`'s
/// `frame-ancestors 'none'`), every value escaped.
enum ConsentPage {
    static func make(
        ticket: String, request: AuthorizationRequest, clientName: String?, scopes: [String], action: String,
        anyProgram: Bool
    ) -> GatewayResponse {
        let e = LoginPages.escape
        // A document's host vouches for its client; a registered client has no one to, and its
        // name is only what it calls itself.
        let name: String
        if let host = request.clientID.host {
            name = clientName.map { "\(e($0)) (\(e(host)))" } ?? e(host)
        } else {
            name =
                "an application registered here, which no website vouches for"
                + (clientName.map { ", that calls itself “\(e($0))”" } ?? "")
        }
        // An https URI's host says where the browser goes; for any other (a loopback address, an
        // app's own scheme) the whole URI does: `com.evil.app://claude.ai/cb` goes to the app.
        let https = request.redirectURI.lowercased().hasPrefix("https://")
        let redirectHost =
            https ? URLComponents(string: request.redirectURI)?.host ?? request.redirectURI : request.redirectURI
        let items = scopes.map { "<li><code>\(e($0))</code></li>" }.joined()
        let form =
            "<p>Application: <strong id=\"client\">\(name)</strong><br>"
            + "Client ID: <code>\(e(request.clientID.text))</code><br>"
            + "Resource: <code id=\"resource\">\(e(request.resource))</code><br>"
            + "You will be sent back to: <strong id=\"redirect-host\">\(e(redirectHost))</strong></p>"
            + (anyProgram
                ? "<p id=\"local-warning\"><strong>The answer goes to a program on this computer.</strong> "
                    + "Allow only if you just started signing in from that application.</p>" : "")
            + "<p>Access asked for:</p><ul id=\"scopes\">\(items)</ul>"
            + "<form method=\"post\" action=\"\(e(action))\">"
            + "<input type=\"hidden\" name=\"ticket\" value=\"\(e(ticket))\">"
            + "<button type=\"submit\" name=\"decision\" value=\"allow\" id=\"allow\">Allow</button> "
            + "<button type=\"submit\" name=\"decision\" value=\"deny\" id=\"deny\">Deny</button></form>"
        var r = GatewayResponse(
            status: 200,
            body: LoginPages.page(
                title: "Allow access?", message: "An application asks to act for you.", link: nil, form: form))
        r.detail = "authorization server: consent asked (\(request.clientID.text))"
        // The POST's `Origin` is checked: the browser must send it (never to another site).
        r.referrerPolicy = "same-origin"
        return r
    }
}
