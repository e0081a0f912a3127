import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// The browser login of one worker (the gateway as OpenID Connect relying party for web apps
/// behind `auth: login` routes): the sessions `SessionStage` reads, refreshes and rechecks
/// (LoginService+Session.swift, +Tunnels), the stores they and the pending logins live in,
/// and what the login endpoints share. Loop-thread only. The endpoints themselves are
/// answered by the content stages of their built-in routes (`LoginStartStage`,
/// `LoginCallbackStage`, `LogoutStage`, `BackChannelLogoutStage`, `JWKSStage`,
/// `HostedRequestObjectStage`) with the flows `LoginStart`, `LoginCallback`,
/// `RPInitiatedLogout` and `BackChannelLogout`.
final class LoginService {
    let loop: EventLoop
    let shared: LoginShared
    let log: Logger
    let tokens: AccessTokenValidator
    /// What every session, pending-login and token decision here reads as "now".
    let wallClock: any WallClock
    let server: AuthorizationServerClient
    /// Each issuer's metadata (the worker's copy, set from discovery on the main loop).
    var providerMetadata: [String: ProviderMetadata] = [:]
    func metadata(_ issuer: String) -> ProviderMetadata? { providerMetadata[issuer] }
    private(set) var config = GatewayConfig()
    private(set) var settings: LoginSettings
    private(set) var store: SessionStore
    /// Logins begun and not yet finished (sealed cookie, or Redis with a Redis store).
    private(set) var pendingLogins: PendingLoginStore
    private let makeStores: (GatewayConfig, LoginSettings) -> LoginStores
    /// Hosted request objects: process memory, or Redis with a Redis store.
    private(set) var requestObjects: RequestObjectHost
    /// Claims a session keeps: those the login routes' headers map (and sub, sid).
    private(set) var keptClaims: Set<String> = ["sub", "sid"]
    /// Whether any login route forwards the access token (else it is not kept).
    private(set) var keepAccessToken = false

    init(
        loop: EventLoop, shared: LoginShared, log: Logger, tokens: AccessTokenValidator, wallClock: any WallClock,
        makeStores: @escaping (GatewayConfig, LoginSettings) -> LoginStores
    ) {
        self.loop = loop
        self.shared = shared
        self.log = log
        self.tokens = tokens
        self.wallClock = wallClock
        self.makeStores = makeStores
        server = AuthorizationServerClient(loop: loop, wallClock: wallClock)
        settings = LoginSettings(GatewayConfig())
        let stores = makeStores(GatewayConfig(), settings)
        store = stores.sessions
        pendingLogins = stores.pendingLogins
        requestObjects = stores.requestObjects
    }

    func apply(_ new: GatewayConfig) {
        config = new
        settings = LoginSettings(new)
        let stores = makeStores(new, settings)
        store = stores.sessions
        pendingLogins = stores.pendingLogins
        requestObjects = stores.requestObjects
        var claims: Set<String> = ["sub", "sid"]
        for route in new.routes {
            guard let login = route.options.auth.loginRoute else { continue }
            for entry in route.options.forwarding.identityHeaders.mapping {
                if let first = entry.path.components.first { claims.insert(first) }
            }
            if let req = login.sessionRequirement { claims.formUnion(req.claimNames) }
            // The identity assertion carries email and groups besides the mapped claims.
            if route.options.forwarding.identityAssertion != nil { claims.formUnion(["email", "groups"]) }
        }
        if let server = new.authorizationServer, server.login != nil { claims.formUnion(server.sessionClaims) }
        keptClaims = claims
        keepAccessToken = new.routes.contains { $0.options.auth.loginRoute?.forwardSessionToken == true }
    }

    /// Unix time in whole seconds, from the injected clock.
    var now: Int64 { wallClock.seconds }

    // MARK: shared helpers

    /// The clock leeway of client `name`'s issuer in whole seconds (0 for an unknown client):
    /// what its ID tokens' times are checked with, at the callback and on the routes after.
    func leeway(ofClient name: String) -> Int64 {
        guard let issuer = config.clients[name]?.issuer.flatMap({ config.issuers[$0] }) else { return 0 }
        return Int64(issuer.leeway)
    }

    /// The client `name`, its issuer and the issuer's metadata (nil while not loaded).
    func target(_ name: String) -> (client: ClientConfig, issuer: IssuerConfig, metadata: ProviderMetadata)? {
        guard let client = config.clients[name], let issuerName = client.issuer,
            let issuer = config.issuers[issuerName],
            let meta = metadata(issuerName)
        else { return nil }
        // RFC 8705 §5: a client presenting a certificate calls the mutual-TLS aliases.
        return (client, issuer, client.tls == nil ? meta : meta.usingMTLSAliases())
    }

    /// Where a session's claims come from besides its ID token, keeping what the config in
    /// force keeps.
    var claimsSources: ClaimsSources {
        .init(server: server, keys: tokens.issuerKeys, log: log, wallClock: wallClock, kept: keptClaims)
    }

    /// How `claimsSources` asks `client`'s AS.
    func claimsClient(_ client: ClientConfig, _ issuer: IssuerConfig) -> ClaimsSources.Client {
        .init(
            client: client, issuer: issuer, target: serverTarget(client, issuer),
            userinfoEndpoint: target(client.name)?.metadata.userinfoEndpoint)
    }

    func serverTarget(_ client: ClientConfig, _ issuer: IssuerConfig) -> AuthorizationServerClient.Target {
        var dpop: DPoPProofSigner?
        if client.login.dpop {
            // A key of its own (not the client's signing key): proofs and request objects
            // are different jobs. `dpop.key_file`, or the process's.
            dpop = config.dpopProofSigner
        }
        return .init(client: client, issuer: issuer, dpop: dpop)
    }

    /// Where the AS sends the browser back: the client's redirect_uri, or the gateway's
    /// public origin (the one the request came to) + the callback path.
    func redirectURI(_ client: ClientConfig, origin: RequestOrigin.Origin?) -> String? {
        if let uri = client.login.redirectURI { return uri }
        guard
            let origin = origin
                ?? config.publicURLs.first.map({ RequestOrigin.Origin(scheme: $0.scheme, authority: $0.authority) })
        else { return nil }
        return "\(origin.scheme)://\(origin.authority)\(config.login.callbackPath)"
    }

    var cookieAttributes: Cookies.Attributes {
        .init(
            secure: settings.secure, maxAge: Int64(config.session.absoluteTimeout), sameSite: settings.sameSite,
            domain: settings.cookieDomain)
    }

    func sessionCookies(_ value: String, _ cookies: Cookies) -> [String]? {
        cookies.set(settings.sessionCookie, value, cookieAttributes)
    }

    /// The one client a request names, or the only login client there is.
    func loginClientName(for route: RouteConfig?) -> String? {
        if let name = route?.options.auth.loginRoute?.client { return name }
        let names = loginClientNames
        return names.count == 1 ? names.first : nil
    }

    /// Every client some login route lists, sorted.
    var loginClientNames: [String] { config.browserLoginClients.sorted() }

    /// `reason`: a stable code for the access log, when the failure has a kind.
    /// `retry`: where the page's "Try again" link goes (the same step again, when it can be
    /// repeated). A client that does not want HTML gets the JSON form (`WorkerServices.answer`).
    static func unavailable(_ detail: String, reason: String? = nil, retry: String? = nil) -> GatewayResponse {
        var r = GatewayResponse.page(
            503, title: "Sign-in unavailable",
            message: "Signing in is not possible right now. Please try again in a moment.",
            link: retry.map { (text: "Try again", href: $0) }, detail: detail)
        r.reason = reason
        r.headers.append(("Retry-After", String(retryAfterSeconds)))
        r.problem = .init(
            error: "temporarily_unavailable", description: "signing in is not possible right now; try again later")
        return r
    }

    /// What a 503 of the login endpoints says in `Retry-After` (RFC 9110 §10.2.3).
    static let retryAfterSeconds = 5

    /// A new login of `client` that comes back to `returnTo` (asking what `stepUp` asks).
    func startRetry(returnTo: String, client: String, stepUp: AuthorizationRequirement? = nil) -> String {
        config.login.startPath + "?"
            + FormEncoding.body([("rd", returnTo), ("client", client)] + StepUpLogin.parameters(stepUp))
    }

    /// `endpoint` with `params` added to its query.
    static func url(_ endpoint: String, _ params: [(String, String)]) -> String {
        endpoint + (endpoint.contains("?") ? "&" : "?") + FormEncoding.body(params)
    }
}
