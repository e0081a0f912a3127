import Foundation
import JOSE
import OAuth
import Reactor

/// The authorization server's own endpoints, as routing finds them (`OwnEndpoint`): its
/// metadata (RFC 8414), its keys, and its token endpoint.
enum AuthorizationServerEndpoint: Sendable, Equatable {
    case metadata
    case jwks
    case token
    case authorize
    case consent
    case consents
    case register

    /// Each endpoint by its path, for the issuer's path (RFC 8414 §3.1: the metadata's
    /// well-known path goes before it).
    static func paths(of config: AuthorizationServerConfig) -> [String: AuthorizationServerEndpoint] {
        let base = ConfigValues.url(config.issuer)?.path ?? ""
        typealias P = AuthorizationServerMetadata.Path
        return [
            P.metadata + base: .metadata, base + P.jwks: .jwks, base + P.token: .token, base + P.authorize: .authorize,
            base + P.consent: .consent, base + P.consents: .consents, base + P.register: .register
        ]
    }
}

/// What a worker keeps for the AS: its config, the client documents fetched on its loop, and
/// the resources its tokens may be for (the routes that take `issuers: [self]`).
final class AuthorizationServerWorker {
    private(set) var config: AuthorizationServerConfig?
    private(set) var documents: ClientDocuments?
    private(set) var resources: Set<String> = []
    private(set) var metadata: [UInt8] = []
    private(set) var jwks: [UInt8] = []
    let hub: AuthorizationServerHub
    /// Codes, refresh-token families and consents, over the store.
    let grants: AuthorizationGrants

    private let loop: EventLoop
    private let wallClock: any WallClock

    init(hub: AuthorizationServerHub, loop: EventLoop, wallClock: any WallClock, grants: AuthorizationGrants) {
        self.hub = hub
        self.loop = loop
        self.wallClock = wallClock
        self.grants = grants
    }

    func apply(_ gateway: GatewayConfig) {
        grants.apply(gateway)
        guard let server = gateway.authorizationServer else {
            config = nil
            documents = nil
            return
        }
        config = server
        if let documents {
            documents.apply(server)
        } else {
            documents = ClientDocuments(loop: loop, wallClock: wallClock, config: server)
        }
        resources = Set(RouteAudiences.resources(of: gateway)[AuthorizationServerConfig.issuerName] ?? [])
        let document = AuthorizationServerMetadata(
            issuer: server.issuer, scopes: server.scopes.map(\.name), registration: server.clients.registration,
            identityAssertions: !server.identityAssertionIssuers.isEmpty,
            dpopAlgorithms: DPoPProofVerifier().algorithms.map(\.rawValue).sorted(),
            signingAlgorithms: PresentedClientAssertion.algorithms,
            codeFlow: server.login != nil)
        metadata = Array(JSONSerializer.serialize(.object(document.document)).utf8)
        jwks = Array(
            JSONSerializer.serialize(
                .object(JSONObject(["keys": .array(server.publicKeys.keys.map { .object($0.publicJWK()) })]))
            )
            .utf8)
    }

    /// The token endpoint's URL, as the metadata names it (a client assertion's `aud`).
    var tokenEndpoint: String { path(AuthorizationServerMetadata.Path.token) }

    /// One of the AS's endpoints' URLs: under its issuer.
    func path(_ endpoint: String) -> String { (config?.issuer ?? "") + endpoint }
}

/// The AS's content stage: answers its endpoints.
struct AuthorizationServerEndpoints {
    /// Unowned: the services outlive every request.
    unowned(unsafe) let services: WorkerServices

    func handle(_ request: RoutedRequest, _ endpoint: AuthorizationServerEndpoint) -> StageOutcome {
        let server = services.authorizationServer
        guard server.config != nil else {
            return .answer(
                ErrorResponse.make(
                    404, error: "not_found", description: "no such endpoint", requestID: request.context.requestID))
        }
        switch endpoint {
        case .metadata, .jwks:
            guard request.head.method == .GET || request.head.method == .HEAD else {
                return .answer(
                    GatewayResponse(status: 405, headers: [("Allow", "GET, HEAD")], body: "", contentType: "text/plain")
                )
            }
            let body = endpoint == .metadata ? server.metadata : server.jwks
            var r = GatewayResponse(
                status: 200, headers: [("Cache-Control", "max-age=300")],
                body: String(decoding: body, as: UTF8.self),
                contentType: endpoint == .metadata ? "application/json" : "application/jwk-set+json")
            r.noStore = false
            r.detail = "authorization server \(endpoint)"
            return .answer(r)
        case .token:
            return TokenEndpoint(services: services, server: server).handle(request)
        case .authorize:
            return AuthorizeEndpoint(services: services, server: server).authorize(request)
        case .consent:
            return AuthorizeEndpoint(services: services, server: server).consent(request)
        case .consents:
            return AuthorizeEndpoint(services: services, server: server).consents(request)
        case .register:
            return RegistrationEndpoint(services: services, server: server).handle(request)
        }
    }
}
