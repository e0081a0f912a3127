import OAuth

/// How a route admits requests: its `auth:` mode with exactly the settings that mode has
/// (docs/configuration.md, `routes[].auth`). A login setting on a token route, or a token
/// setting on a login route, cannot be written. `indirect`: each mode's settings are boxed,
/// so a route, copied into the config and each worker's plan, stays small.
indirect enum RouteAuth: Sendable {
    /// `auth: none`: every request passes, with no identity.
    case none
    /// `auth: bearer`, `dpop` or `token`: an access token (RFC 6750, RFC 9449); which schemes
    /// are accepted is `TokenRouteConfig.schemes`.
    case tokens(TokenRouteConfig)
    /// `auth: login`: a browser session; a navigation without one starts a login.
    case login(LoginRouteConfig)
    /// `auth: login_or_token`: a session when the request carries the session cookie, else
    /// the token rules of `auth: token`.
    case loginOrToken(LoginRouteConfig, TokenRouteConfig)

    /// The session part of a `login` or `login_or_token` route.
    var loginRoute: LoginRouteConfig? {
        switch self {
        case .login(let login), .loginOrToken(let login, _): login
        case .none, .tokens: nil
        }
    }

    /// The `issuers` entries (by name) that vouch for this route's callers: its token
    /// issuers, its key sets (`api_keys`) and its login clients' issuers. With more than one, a `sub`, a `client_id` or
    /// a claim names a caller only together with the issuer that said it.
    func vouchers(clients all: [String: ClientConfig]) -> Set<String> {
        Set((tokenRoute?.issuers ?? []) + (tokenRoute?.apiKeySets ?? [])).union(
            (loginRoute?.clients ?? []).compactMap { all[$0]?.issuer })
    }

    /// The access-token part of a `bearer`, `dpop`, `token` or `login_or_token` route.
    var tokenRoute: TokenRouteConfig? {
        get {
            switch self {
            case .tokens(let tokens), .loginOrToken(_, let tokens): tokens
            case .none, .login: nil
            }
        }
        set {
            guard let newValue else { return }
            switch self {
            case .tokens: self = .tokens(newValue)
            case .loginOrToken(let login, _): self = .loginOrToken(login, newValue)
            case .none, .login: break
            }
        }
    }
}

/// The session settings of a `login` / `login_or_token` route.
struct LoginRouteConfig: Sendable {
    /// Every client that may log browsers in on this route (`clients:`; `[client]` with
    /// `client:`), never empty. A session belongs to one client and serves only routes that
    /// list it.
    let clients: [String]
    /// The session's access token goes upstream (`pass_access_token`, or `forward_token: true`
    /// on `auth: login`, which is `pass_access_token: Authorization`).
    var forwardSessionToken = false
    /// Scopes and claims a session must have (`require:`; on `login_or_token` the one the
    /// token rules use), checked against the session's claims and the scope the token
    /// response granted.
    var sessionRequirement: AuthorizationRequirement?

    /// nil without a client (the parser has reported why).
    init?(clients: [String], forwardSessionToken: Bool = false, sessionRequirement: AuthorizationRequirement? = nil) {
        guard !clients.isEmpty else { return nil }
        self.clients = clients
        self.forwardSessionToken = forwardSessionToken
        self.sessionRequirement = sessionRequirement
    }

    /// `client:`, or the first of `clients:`: the client a browser logs in with when the
    /// route offers no choice.
    var client: String { clients[0] }
}
