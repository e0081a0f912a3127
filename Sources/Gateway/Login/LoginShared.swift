import Foundation
import JOSE
import OAuth

/// What every worker's login service shares: ended sessions (embedded store), the refresh
/// coordinator, hosted request objects — made once at start, kept across reloads. Checked
/// Sendable: constants only, each of a type that guards its own state.
final class LoginShared: Sendable {
    let ended = EndedSessions()
    let refreshes: RefreshCoordinator
    let requestObjects = HostedRequestObjects()
    /// jtis of back-channel logout tokens already acted on.
    let logoutTokens = MemoryReplayCache(capacity: 100_000)

    /// `refreshes`: a test may take one without the grace, to refresh a session again at once.
    init(refreshes: RefreshCoordinator = RefreshCoordinator()) { self.refreshes = refreshes }
}

/// Random per-process keys for when the config names none. Sessions sealed with them do not
/// survive a restart, and replicas cannot read each other's: fine for one process, and
/// logged at start.
extension ProcessSecrets {
    static let sessionKey: [UInt8] = SecureRandom.bytes(32)
    /// The DPoP key of clients with `dpop: true` and no key_file.
    static let dpopKey: JWK = {
        do { return try JWK.generate(for: .ES256, kid: nil) } catch { preconditionFailure("\(error)") }
    }()
}

/// The per-config pieces of the login: cookie sealer, CSRF key, cookie names. Rebuilt when
/// the config changes (keys may rotate).
struct LoginSettings {
    let sealer: CookieSealer
    /// Keys the logout form's CSRF token (an HMAC of the session id).
    let csrfKey: MACKey
    let sessionCookie: String
    let loginCookie: String
    let secure: Bool
    /// `session.cookie_domain` and `session.same_site`, for the session cookie only: the
    /// login-state cookie stays host-only and Lax (the AS's redirect back must carry it).
    let cookieDomain: String?
    let sameSite: String

    init(_ config: GatewayConfig) {
        let keys = config.session.keys.isEmpty ? [ProcessSecrets.sessionKey] : config.session.keys
        sealer = CookieSealer(sessionKeysOf: config)
        csrfKey = MACKey(secret: Digest.sha256.hash(Array("tokengate logout csrf".utf8) + keys[0]))!
        secure = config.session.secureCookie
        cookieDomain = config.session.cookieDomain
        sameSite = config.session.sameSite.attribute
        sessionCookie = Cookies.name(config.session.cookieName, secure: secure, domain: cookieDomain)
        loginCookie = Cookies.name("tokengate_login", secure: secure)
    }

    func csrfToken(_ session: Session) -> String {
        Base64URL.encode(Array(csrfKey.authenticate(Array(session.id.utf8)).prefix(24)))
    }

    func csrfTokenIsValid(_ token: String, for session: Session) -> Bool {
        guard let raw = Base64URL.decode(token), raw.count == 24 else { return false }
        return csrfKey.isValid(raw, for: Array(session.id.utf8))
    }
}
