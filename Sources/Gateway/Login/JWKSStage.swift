import JOSE
import OAuth

/// The content of the JWKS endpoint's built-in route, `/.well-known/jwks.json`: the public
/// keys of the clients (for an AS that reads the client's jwks_uri to check its request
/// objects and assertions), of the identity assertions, and of the keys that sign upstream
/// requests and responses.
final class JWKSStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        request.answering(Self.response(request.services.config))
    }

    /// The JWK Set of `config`'s public keys, as the answer.
    static func response(_ config: GatewayConfig) -> GatewayResponse {
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
