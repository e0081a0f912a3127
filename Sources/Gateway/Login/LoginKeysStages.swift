import JOSE
import OAuth

/// The content of the JWKS endpoint's built-in route, `/.well-known/jwks.json`: the public
/// keys of the clients (for an AS that reads the client's jwks_uri to check its request
/// objects and assertions), of the identity assertions, and of the keys that sign upstream
/// requests and responses.
final class JWKSStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        request.ownAnswer(Self.keys(request.services.config))
    }

    /// The JWK Set of `config`'s public keys.
    static func keys(_ config: GatewayConfig) -> GatewayResponse {
        // The clients' keys, then the identity assertion keys (all of them: a key listed
        // second is published before it signs, so upstreams have it when it starts to).
        let clients = config.clients.values.sorted { $0.name < $1.name }
        let keys = clients.compactMap(\.key) + config.assertionKeys.map(\.key)
        // The keys the gateway signs upstream requests with (`upstreams.NAME.sign`).
        let signing =
            (config.upstreams.values.sorted { $0.name < $1.name }.compactMap(\.sign) + config.responseSigningKeys)
            .map(\.publicJWK)
        // Self-signed client certificates as JWKs with x5c (RFC 8705 §2.2), for the AS to match.
        let certificates = clients.compactMap(\.tls?.publishedJWK)
        let all =
            keys.map { JSONValue.object($0.publicJWK()) } + signing.map { .object($0) }
            + certificates.map { .object($0) }
        return GatewayResponse(
            status: 200, body: JSONSerializer.serialize(.object(JSONObject(["keys": .array(all)]))),
            contentType: "application/jwk-set+json")
    }
}

/// The content of a hosted request object's built-in route (`request_mode: request_uri`, RFC
/// 9101 §5.2): served once, then gone.
final class HostedRequestObjectStage: Stage {
    let id: Substring

    init(id: Substring) {
        self.id = id
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        request.services.authentication.login.requestObjects.take(String(id)) { jwt in
            guard let jwt else {
                request.answerOwn(
                    GatewayResponse(
                        status: 404, body: "", contentType: "text/plain",
                        detail: "request object not found or already used"))
                return
            }
            request.answerOwn(
                GatewayResponse(
                    status: 200, body: jwt, contentType: "application/oauth-authz-req+jwt",
                    detail: "request object served"))
        }
        return .suspend
    }
}
