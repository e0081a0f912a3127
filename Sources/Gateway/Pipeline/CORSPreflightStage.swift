import JOSE
import Reactor

/// `cors_preflight: allow`: a CORS preflight carries no credentials (Fetch §3.2.2), so it is
/// admitted unauthenticated and forwarded with none; any other OPTIONS goes on to the route's
/// authentication. In a route's plan ahead of its authentication stage, which lets an
/// admitted request pass.
final class CORSPreflightStage: Stage {
    private let sessionRoute: Bool

    init(route: RouteConfig) {
        sessionRoute = route.options.auth.loginRoute != nil
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        guard CORSPreflight.matches(request.head, hasContent: request.hasContent) else { return .proceed }
        // As on the session path: the upstream's answer cannot set the gateway's cookies.
        if sessionRoute { request.context.response.ownCookies = request.services.config.ownCookieNames }
        request.admission = Admission(identity: [], session: false, body: nil, claims: JSONObject(), preflight: true)
        return .proceed
    }
}
