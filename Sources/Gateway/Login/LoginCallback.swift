import Foundation
import JOSE
import OAuth

/// The content of the callback's built-in route: the redirect back from the AS, GET only.
final class LoginCallbackStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        guard request.head.method == .GET || request.head.method == nil else {
            return request.answering(.page(405, title: "Sign-in", message: "Method not allowed."))
        }
        let services = request.services
        let ctx = request.context
        let callback = LoginCallback(login: services.authentication.login, clock: services.clock)
        callback.run(
            query: Substring(request.query ?? ""), origin: services.origin(ctx.forwarded),
            cookies: Cookies(request.head.fields)
        ) { response, timing in
            // The gateway's own time for the callback, the token endpoint's excluded.
            let own = services.clock() - ctx.start - timing.tokenEndpointSeconds
            services.metrics.recordCallback(ownSeconds: own)
            var r = services.config.session.sameSite == .strict ? response.strictSameSiteHop() : response
            r.detail = (response.detail ?? "") + " (own \(Int(own * 1e6)) us)"
            request.answerOwn(r, upstreamSeconds: timing.tokenEndpointSeconds)
        }
        return .suspend
    }
}

/// The redirect back from the AS: the response must answer a login this browser began (its
/// `state` in the browser's login-state cookie), come from the right AS (RFC 9207 `iss`),
/// and its code must buy an ID token that passes OIDC Core §3.1.3.7 with this login's nonce.
/// Then the session starts (`LoginService` keeps it) and the browser goes where it wanted to
/// go. The code's redemption is in LoginCallback+Redeem.swift, the response modes in
/// LoginCallback+ResponseMode.swift.
struct LoginCallback {
    let login: LoginService
    /// The worker's monotonic clock: the token endpoint's time is logged apart.
    let clock: () -> Double

    typealias SessionFailure = LoginService.SessionFailure

    struct Timing {
        var tokenEndpointSeconds = 0.0
    }

    func run(
        query: Substring, origin: RequestOrigin.Origin?, cookies: Cookies,
        done: @escaping (GatewayResponse, Timing) -> Void
    ) {
        let timing = Timing()
        func fail(
            _ status: Int, _ message: String, _ detail: String, reason: String, cookies setCookies: [String] = []
        ) {
            done(signInFailed(status, message, detail, reason: reason, cookies: setCookies), timing)
        }
        // The state first: it says which login (and so which client and AS) this answers.
        // A JARM response carries it inside its JWT, read unverified only to find the login
        // (LoginCallback+ResponseMode.swift verifies it before anything in it is used).
        guard let pairs = FormEncoding.decode(query),
            let state = pairs.first(where: { $0.0 == "state" })?.1
                ?? pairs.first(where: { $0.0 == "response" }).flatMap({ JARMResponse.unverifiedState($0.1) })
        else {
            fail(
                400, "The sign-in response was not valid.", "callback without state",
                reason: LoginFailure.noState.code)
            return
        }
        login.pendingLogins.take(state: state, cookies: cookies, now: login.now) { result in
            switch result {
            case .failure(let e):
                // Nothing was taken: a reload of this very callback can still finish the login.
                done(
                    LoginService.unavailable(
                        "login state: \(e)", reason: LoginFailure.loginStateUnavailable.code, retry: retry(query)),
                    timing)
            case .success(let taken):
                guard let pending = taken.login else {
                    fail(
                        400, "This sign-in was not started in this browser, or it took too long. Please start again.",
                        "no pending login for this state (cookie missing, replayed or expired)",
                        reason: LoginFailure.noPendingLogin.code, cookies: taken.setCookies)
                    return
                }
                finish(
                    query: query, pending: pending, taken: taken, origin: origin, cookies: cookies, timing: timing,
                    done: done)
            }
        }
    }

    /// The callback again, as the AS sent the browser to it (same code and state).
    func retry(_ query: Substring) -> String { login.config.login.callbackPath + "?" + query }

    /// A failed callback's page, with a way to start again.
    func signInFailed(
        _ status: Int, _ message: String, _ detail: String, reason: String, cookies: [String]
    ) -> GatewayResponse {
        var r = GatewayResponse.page(
            status, title: "Sign-in failed", message: message,
            link: (text: "Sign in again", href: login.config.login.startPath), cookies: cookies, detail: detail)
        r.reason = reason
        return r
    }

    /// The rest of a callback whose state named a pending login of this browser.
    private func finish(
        query: Substring, pending: PendingLogins.Login, taken: PendingLoginTake, origin: RequestOrigin.Origin?,
        cookies: Cookies, timing: Timing, done: @escaping (GatewayResponse, Timing) -> Void
    ) {
        guard let (client, issuer, meta) = login.target(pending.client) else {
            unavailableKeepingLogin(
                taken, query: query, "login client \(pending.client): metadata not loaded",
                reason: LoginFailure.metadataNotLoaded.code, timing: timing, done: done)
            return
        }
        authorizationResponse(query: query, client: client, issuer: issuer, meta: meta) { parsed in
            redeem(
                parsed, pending: pending, taken: taken, client: client, issuer: issuer, meta: meta,
                origin: origin, cookies: cookies, query: query, timing: timing, done: done)
        }
    }

    /// The code was not redeemed: the pending login goes back, and the page offers this same
    /// callback again (no Set-Cookie of the take, so the browser keeps its login state).
    func unavailableKeepingLogin(
        _ taken: PendingLoginTake, query: Substring, _ detail: String, reason: String, timing: Timing,
        done: @escaping (GatewayResponse, Timing) -> Void
    ) {
        login.pendingLogins.restore(taken, now: login.now) { restored in
            if case .failure(let e) = restored {
                login.log.warning(
                    "pending login not restored after a failed code exchange", metadata: ["error": .string("\(e)")])
            }
            done(LoginService.unavailable(detail, reason: reason, retry: retry(query)), timing)
        }
    }
}
