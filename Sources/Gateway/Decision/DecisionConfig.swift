/// `decision:` — tokengate as the judge behind an ingress that proxies itself (nginx
/// `auth_request`, ingress-nginx `auth-url`, Traefik `forwardAuth`, Caddy `forward_auth`, Envoy
/// `ext_authz` HTTP service). The ingress describes the original request; tokengate routes it
/// with the same routes and answers the verdict instead of calling an upstream.
public struct DecisionConfig: Sendable {
    /// Off unless `decision:` is in the config.
    public var enabled = false
    /// The forward-auth endpoint (nginx, Traefik, Caddy).
    public var path = "/oauth2/auth"
    /// Envoy's HTTP ext_authz form: `<prefix>/<original path>`; nil: off.
    public var extAuthzPrefix: String? = "/ext_authz"
    /// The status of an allowed verdict: 200, or 202 (oauth2-proxy's).
    public var allowStatus = 200
    /// How a page navigation without a session on a login route is answered.
    public var loginResponse = LoginResponse.auto

    public enum LoginResponse: String, Sendable {
        /// nginx (X-Original-URL): 401 with the login URL in `X-Auth-Login-URL`, for an
        /// `error_page 401 =` redirect; Traefik / Caddy (X-Forwarded-Uri), which hand the
        /// verdict to the client: 302 to the login URL.
        case auto
        case unauthorized = "401"
        case redirect = "302"
    }

    public init() {}
}
