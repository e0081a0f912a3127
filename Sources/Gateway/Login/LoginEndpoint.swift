/// The gateway's own paths for browser logins, answered before routing (a catch-all route
/// must not send them upstream).
enum LoginEndpoint: Equatable {
    case start, callback, logout, backchannelLogout, jwks
    case requestObject(id: Substring)

    /// The endpoint `path` (already normalized) names, if login is configured.
    static func match(_ path: String, _ config: GatewayConfig) -> LoginEndpoint? {
        let l = config.login
        let hasLogin = config.routes.contains { $0.auth.loginRoute != nil }
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
        if path == l.jwksPath
            && (config.clients.values.contains(where: { $0.key != nil }) || !config.assertionKeys.isEmpty)
        {
            return .jwks
        }
        return nil
    }
}
