import OAuth
import Reactor

/// Step-up on a login route (RFC 9470 §4, OIDC Core §3.1.2.1): a session whose `acr` is not
/// one the route lists, or whose `auth_time` is older than its `max_age` (or missing), is
/// answered as a request without a session is — a navigation starts a new login, now asking
/// `acr_values` and `max_age`; anything else gets 401 `login_required` — and it keeps the
/// session it has (the new login replaces it only once its ID token says what was asked).
extension SessionStage {
    /// Whether `session` meets the route's `acr` / `max_age`; if not, the request is answered.
    /// `max_age` is read with the issuer's leeway, as the callback read it: a session the callback
    /// took as fresh enough is taken so here too for that long, else a route with a `max_age`
    /// shorter than a login takes (`1s`) would send every browser back to log in, endlessly.
    func meetsStepUp(_ request: RoutedRequest, _ session: Session, setCookies: [String]) -> Bool {
        guard let requirement = loginRoute.sessionRequirement, requirement.hasStepUp,
            let failure = requirement.stepUpFailure(
                session.claims, now: login.now,
                leeway: login.leeway(ofClient: session.client),
                maxAgeGrace: login.leeway(ofClient: session.client))
        else { return true }
        var asked = AuthorizationRequirement()
        asked.acr = requirement.acr
        asked.maxAge = requirement.maxAge
        stepUp(request, session, asked: asked, failure, setCookies: setCookies)
        return false
    }

    private func stepUp(
        _ request: RoutedRequest, _ session: Session, asked: AuthorizationRequirement,
        _ failure: AuthorizationRequirement.StepUpFailure, setCookies: [String]
    ) {
        let ctx = request.context
        let navigation = Self.isNavigation(request.head)
        if navigation, let original = ctx.kind.original {
            DecisionLoginAnswer.answer(
                request, original: original, clear: setCookies, stepUp: (client: session.client, asked: asked))
        } else if navigation {
            var returnTo = request.path + (request.query.map { "?" + $0 } ?? "")
            if returnTo.utf8.count > 1024 { returnTo = "/" }
            // The session's own client: the same account at the same AS, authenticated again.
            LoginStart(login: login).begin(
                client: session.client, returnTo: returnTo, loginHint: nil,
                origin: request.services.origin(request.origin),
                cookies: Cookies(request.head.fields), stepUp: asked
            ) { response in
                var r = response
                r.headers += setCookies.map { ("Set-Cookie", $0) }
                r.detail = "step-up (\(failure)): " + (r.detail ?? "")
                request.answer(r)
            }
        } else {
            ctx.rejection = .refused(.insufficientUserAuthentication)
            metrics.authFailure(.insufficientUserAuthentication)
            request.answer(
                request.services.browserPage(
                    request.exchange, ctx, title: "Sign-in required",
                    ErrorResponse.make(
                        401, error: "login_required",
                        description: "sign in again: this resource needs a stronger or more recent sign-in",
                        requestID: ctx.requestID, headers: setCookies.map { ("Set-Cookie", $0) },
                        detail: "session does not meet the route's step-up requirement: \(failure)")))
        }
    }
}
