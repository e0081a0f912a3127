/// The gateway's own paths for browser logins, answered before routing (a catch-all route
/// must not send them upstream).
enum LoginEndpoint: Equatable {
    case start, callback, logout, backchannelLogout, jwks
    case requestObject(id: Substring)

    /// The endpoints one config serves, worked out once per config (every request is
    /// matched against them before routing).
    struct Paths: Sendable {
        let login: LoginConfig
        /// Some route logs browsers in: the login endpoints exist.
        let hasLogin: Bool
        /// A client signs with a key, or assertions are signed: the JWKS endpoint exists.
        let servesJWKS: Bool

        init(_ config: GatewayConfig) {
            login = config.login
            hasLogin = !config.browserLoginClients.isEmpty
            servesJWKS =
                config.clients.values.contains(where: { $0.key != nil }) || !config.assertionKeys.isEmpty
                || config.upstreams.values.contains(where: { $0.sign != nil }) || !config.responseSigningKeys.isEmpty
        }

        /// The endpoint `path` (already normalized) names, if any.
        func match(_ path: String) -> LoginEndpoint? {
            let l = login
            if hasLogin {
                if path == l.startPath { return .start }
                if path == l.callbackPath { return .callback }
                if path == l.logoutPath { return .logout }
                if path == l.backchannelLogoutPath { return .backchannelLogout }
                if path.hasPrefix(l.requestObjectPath) {
                    let id = path.dropFirst(l.requestObjectPath.count)
                    if id.utf8.count == 43, !id.contains("/") { return .requestObject(id: id) }
                }
            }
            if path == l.jwksPath && servesJWKS { return .jwks }
            return nil
        }
    }
}
