/// `decision:` — tokengate as the judge behind an ingress that proxies itself (nginx
/// `auth_request`, ingress-nginx `auth-url`, Traefik `forwardAuth`, Caddy `forward_auth`, Envoy
/// `ext_authz` HTTP service). The ingress describes the original request; tokengate routes it
/// with the same routes and answers the verdict instead of calling an upstream.
struct DecisionConfig: Sendable {
    /// Off unless `decision:` is in the config.
    var enabled = false
    /// The forward-auth endpoint (nginx, Traefik, Caddy).
    var path = "/oauth2/auth"
    /// Envoy's HTTP ext_authz form: `<prefix>/<original path>`; nil: off.
    var extAuthzPrefix: String? = "/ext_authz"
    /// The status of an allowed verdict: 200, or 202 (oauth2-proxy's).
    var allowStatus = 200
    /// How a page navigation without a session on a login route is answered.
    var loginResponse = LoginResponse.auto

    enum LoginResponse: String, Sendable {
        /// nginx (X-Original-URL): 401 with the login URL in `X-Auth-Login-URL`, for an
        /// `error_page 401 =` redirect; Traefik / Caddy (X-Forwarded-Uri), which hand the
        /// verdict to the client: 302 to the login URL.
        case auto
        case unauthorized = "401"
        case redirect = "302"
    }

    init() {}
}
