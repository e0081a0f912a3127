/// `decision:` — tokengate as the judge behind an ingress that proxies itself (nginx
/// `auth_request`, ingress-nginx `auth-url`, Traefik `forwardAuth`, Caddy `forward_auth`, Envoy
/// `ext_authz` HTTP service). The ingress describes the original request; tokengate routes it
/// with the same routes and answers the verdict instead of calling an upstream.
///
/// Each ingress convention has its own endpoint, and an endpoint reads only its convention's
/// headers: Caddy and Traefik pass the client's headers on to the judge, so a description the
/// ingress does not set itself (a client's `X-Original-URL` behind Caddy) must never be read.
/// The endpoints sit outside `/oauth2/`, which the recipes route to tokengate publicly.
struct DecisionConfig: Sendable {
    /// Off unless `decision:` is in the config.
    var enabled = false
    /// nginx `auth_request` / ingress-nginx: `X-Original-URL` (absolute) and `X-Original-Method`.
    var path: String? = "/_tokengate/auth"
    /// Traefik `forwardAuth`, Caddy `forward_auth`: `X-Forwarded-Method`, `-Proto`, `-Host`, `-Uri`.
    var forwardAuthPath: String? = "/_tokengate/forward-auth"
    /// Envoy's HTTP ext_authz form: `<prefix>/<original path>`; nil: off.
    var extAuthzPrefix: String? = "/_tokengate/ext_authz"
    /// Envoy's gRPC ext_authz service (`envoy.service.auth.v3.Authorization/Check`) on every
    /// HTTP/2 listener; off unless set.
    var extAuthzGRPC = false
    /// The status of an allowed verdict: 200, or 202 (oauth2-proxy's).
    var allowStatus = 200
    /// How a page navigation without a session on a login route is answered.
    var loginResponse = LoginResponse.auto
    /// A shared secret the ingress sends in `secretHeader` on every decision request; nil: none
    /// (then only `trusted_proxies` guards the endpoints). Compared in constant time.
    var secret: [UInt8]?
    static let secretHeader = "X-Tokengate-Decision-Secret"
    /// The most of a request's body a `Check` may carry (Envoy's `with_request_body`): the
    /// largest `mcp.max_request_bytes` of the MCP routes, whose calls are judged by their
    /// body; 0 without MCP routes. Derived from the routes, not a key.
    var maxBodyBytes = 0

    enum LoginResponse: String, Sendable {
        /// nginx (its endpoint): 401 with the login URL in `X-Auth-Login-URL`, for an
        /// `error_page 401 =` redirect; Traefik / Caddy / Envoy, which hand the verdict to the
        /// client: 302 to the login URL.
        case auto
        case unauthorized = "401"
        case redirect = "302"
    }

    init() {}
}
