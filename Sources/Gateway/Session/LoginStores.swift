import Foundation
import Reactor

/// A worker's stores for browser logins, rebuilt with each config (keys and timeouts change).
struct LoginStores {
    let sessions: SessionStore
    let pendingLogins: PendingLoginStore
    /// Hosted request objects (`request_mode: request_uri`).
    let requestObjects: RequestObjectHost
}
