import OAuth

/// Several login clients (`clients: [corp, partners]` on a route): which one a login at
/// /oauth2/start uses — the one `?client=` names, the only one there is, or the browser's
/// choice on the choice page.
extension LoginService {
    enum ClientChoice {
        case client(String)
        /// Several, none named: the choice page lists these.
        case choose([String])
        case refused(GatewayResponse)
    }

    func chooseClient(named name: String?) -> ClientChoice {
        let names = loginClientNames
        if let name {
            // Only a client some login route lists: never another registration (an
            // introspection client, say) that a crafted link could start a login with. The
            // name is never echoed: a crafted link would put its own text on the gateway's page.
            guard names.contains(name) else {
                return .refused(
                    .page(
                        400, title: "Sign-in", message: "This sign-in link names no sign-in configured here.",
                        link: (text: "Choose a sign-in", href: config.login.startPath),
                        detail: "unknown login client in ?client="))
            }
            return .client(name)
        }
        switch names.count {
        case 0: return .refused(.page(400, title: "Sign-in", message: "No login is configured here."))
        case 1: return .client(names[0])
        default: return .choose(names)
        }
    }
}
