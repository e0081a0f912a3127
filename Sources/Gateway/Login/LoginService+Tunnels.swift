import Reactor

/// Whether the session a tunnel was opened on is still alive, asked again while the tunnel
/// runs (`Tunnels`). The same store and cache as the request path, so an RP
/// logout, a back-channel logout on any replica (through the shared store) or a refresh
/// the AS refused is seen within `session.cache_ttl`; the idle and absolute timeouts are
/// the request path's. Unlike a request it does not move the idle deadline: a WebSocket
/// alone does not keep a session alive past `session.idle_timeout`.
extension LoginService {
    enum SessionLiveness {
        case alive
        case ended(String)
        /// The store could not say: the tunnel stays (as a request would get 503, not a logout).
        case unknown
    }

    func recheck(route: LoginRouteConfig, cookies: Cookies, done: @escaping (SessionLiveness) -> Void) {
        guard let value = cookies.value(settings.sessionCookie) else {
            done(.ended("no session cookie"))
            return
        }
        store.load(value) { [weak self] lookup in
            guard let self else { return }
            switch lookup {
            case .unavailable: done(.unknown)
            case .none: done(.ended("session ended"))
            case .found(let session):
                let now = self.now
                // The request path's rule: a session serves the routes that list its client.
                guard route.clients.contains(session.client) else {
                    done(.ended("session of another client"))
                    return
                }
                guard now - session.createdAt < Int64(self.config.session.absoluteTimeout) else {
                    done(.ended("absolute timeout"))
                    return
                }
                guard now - session.lastSeenAt < Int64(self.config.session.idleTimeout) else {
                    done(.ended("idle timeout"))
                    return
                }
                guard session.refreshToken != nil,
                    now >= session.accessExpiresAt - Int64(self.config.session.refreshMargin)
                else {
                    done(.alive)
                    return
                }
                // Due for a refresh: the request path's (one per session across workers); a
                // refusal ends the session, and so the tunnel.
                self.refresh(session, cookies: cookies, forwardsToken: route.forwardSessionToken) { decision in
                    switch decision {
                    case .allow: done(.alive)
                    case .none: done(.ended("refresh refused"))
                    case .unavailable: done(.unknown)
                    }
                }
            }
        }
    }

    /// When the session's absolute timeout ends it (Unix seconds).
    func absoluteEnd(of session: Session) -> Int64 { session.createdAt + Int64(config.session.absoluteTimeout) }
}
