import Foundation
import JOSE
import OAuth
import Reactor

/// The answers of the decision endpoint that are not a proxied request's: the allowed
/// verdict and the login a browser is sent to.
enum DecisionVerdict {
    /// oauth2-proxy's verdict headers (its `/oauth2/auth`), so ingress configs written for it
    /// keep working: the claims they name, whatever the route maps.
    static let authRequestHeaders: [(String, String)] = [
        ("X-Auth-Request-User", "sub"), ("X-Auth-Request-Email", "email"),
        ("X-Auth-Request-Groups", "groups"), ("X-Auth-Request-Preferred-Username", "preferred_username")
    ]
    static let authRequest = IdentityHeaders(mapping: authRequestHeaders.map { ($0.0, ClaimPath($0.1)!) })

    /// Allowed: no body; the route's identity headers (which the ingress copies to its
    /// upstream request), oauth2-proxy's `X-Auth-Request-*`, the access token where the route
    /// forwards one, and the response headers a proxied answer would carry (a fresh
    /// `DPoP-Nonce`, a refreshed session's `Set-Cookie`).
    static func allowed(
        status: Int, admission: Admission, accessToken: String?, upstreamCookie: String,
        responseHeaders: [(String, String)]
    ) -> GatewayResponse {
        var headers = admission.identity
        headers += authRequest.values(for: admission.claims)
        if let accessToken { headers.append(("X-Auth-Request-Access-Token", accessToken)) }
        headers.append((upstreamCookieHeader, upstreamCookie))
        // A verdict is never cached (GatewayResponse says no-store): the session stage's own
        // Cache-Control, meant for an upstream answer, would only repeat it.
        headers += responseHeaders.filter { $0.0 != "Cache-Control" }
        return GatewayResponse(
            status: status, headers: headers, body: "", contentType: "text/plain", detail: "decision: allowed")
    }

    /// The verdict header with the request's cookies minus the gateway's own (the sealed session,
    /// login state): the ingress sets the upstream's `Cookie` from it, as proxy mode strips
    /// them itself. Always present, empty when nothing is left: nginx then sends no `Cookie`,
    /// and Caddy 2.6's `copy_headers` (which sets a header the verdict lacks to its placeholder
    /// text) sets an empty one instead of the client's.
    static let upstreamCookieHeader = "X-Tokengate-Cookie"

    static func upstreamCookie(_ head: HTTPRequestHead, own: Set<String>) -> String {
        head.fields.values("Cookie").compactMap { CookieFilter.without(own, $0) }.joined(separator: "; ")
    }

    /// The access token a route forwards (`forward_token`), for `X-Auth-Request-Access-Token`:
    /// a session's own token (the ingress has never seen it), or the one the client presented.
    static func forwardedToken(route: RouteConfig, admission: Admission, head: HTTPRequestHead) -> String? {
        if admission.session {
            // "Bearer …", or "DPoP …" for a DPoP-bound session token.
            guard route.options.auth.loginRoute?.forwardSessionToken == true,
                let credential = admission.identity.first(where: { $0.0 == "Authorization" })?.1,
                let space = credential.firstIndex(of: " ")
            else { return nil }
            return String(credential[credential.index(after: space)...])
        }
        // A key is no token: it is never handed on, whatever the route forwards.
        guard !admission.byKey, route.options.auth.tokenRoute?.forwardToken == true,
            let credential = head.fields.first("Authorization"),
            let space = credential.firstIndex(of: " ")
        else { return nil }
        return String(credential[credential.index(after: space)...]).trimmingCharacters(in: .whitespaces)
    }

    /// Where a browser without a session logs in: the gateway's start path on the original
    /// origin (the ingress routes it to tokengate), coming back to the original URL.
    /// A step-up login (RFC 9470 §4) also names the session's `client` and what it asks
    /// (`StepUpLogin`).
    static func loginURL(
        _ original: DecisionRequest, startPath: String, stepUp: (client: String, asked: AuthorizationRequirement)? = nil
    ) -> String {
        var url = "\(original.scheme)://\(original.host)\(startPath)?rd=\(FormEncoding.encode(original.url))"
        if let stepUp {
            url += "&" + FormEncoding.body([("client", stepUp.client)] + StepUpLogin.parameters(stepUp.asked))
        }
        return url
    }

    /// The header of a 401 verdict that names the login URL, for nginx's `auth_request_set`.
    static let loginURLHeader = "X-Auth-Login-URL"
}

extension Admission {
    /// The verdict's identity headers, with the `DPoP` proof that a DPoP-bound token the
    /// gateway hands on (a session's, an exchanged one) needs: the ingress sends the request
    /// on at the original URL, so that is the proof's `htu` (RFC 9449 §4.2).
    func verdictIdentity(method: String, scheme: String, host: String, target: String) -> [(String, String)] {
        guard let upstreamProof,
            let proof = upstreamProof.proof(method: method, scheme: scheme, host: host, target: target)
        else { return identity }
        return identity + [("DPoP", proof)]
    }
}

/// The login side of decisions.
enum DecisionLogin {
    /// An absolute `rd` on `origin` (scheme and authority equal, ASCII case-insensitively) as
    /// the path it names; nil for any other URL. A decision's login URL carries the original
    /// URL, which is on the origin the browser starts the login from.
    static func sameOriginPath(_ rd: String, origin: RequestOrigin.Origin?) -> String? {
        guard let origin, let (scheme, host, target) = DecisionRequest.splitAbsolute(rd),
            scheme == origin.scheme.lowercased(), host.lowercased() == origin.authority.lowercased()
        else { return nil }
        return target
    }

    /// Where the login that `rd` starts returns to: an absolute `rd` on `origin` as its path,
    /// then whatever `policy` allows (RFC 9700 §4.11), else "/".
    static func returnTarget(_ rd: String?, origin: RequestOrigin.Origin?, policy: ReturnTo) -> String {
        rd.flatMap { sameOriginPath($0, origin: origin).flatMap(policy.check) ?? policy.check($0) } ?? "/"
    }
}
