import Foundation
import JOSE
import OAuth
import Reactor

/// Dynamic client registration (RFC 7591), with `clients.registration: true`, for the MCP
/// clients that have no Client ID Metadata Document. A registered client is public (`none`):
/// nothing vouches for keys it would give, so it proves itself with PKCE like any public
/// client, and its user sees the consent page every time (`AuthorizeEndpoint`). Its metadata is
/// checked by the same rules as a document's and kept in the store for
/// `AuthorizationServerConfig.registrationTTL`; the endpoint counts against a per-address
/// limit (`OwnRoutes.registration`), since anyone may call it.
struct RegistrationEndpoint {
    /// Unowned: the services outlive every request.
    unowned(unsafe) let services: WorkerServices
    let server: AuthorizationServerWorker

    /// The per-address limit: 20 an hour, 5 at once.
    static let limit = {
        var p = RateLimitPolicy(
            name: "as-registration", limit: RateLimitRule(rate: RateLimitRate(count: 20, seconds: 3600), burst: 5))
        p.key = .ip
        return p
    }()

    func handle(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        guard let config = server.config, config.clients.registration else {
            return .answer(
                ErrorResponse.make(404, error: "not_found", description: "no such endpoint", requestID: ctx.requestID))
        }
        guard request.head.method == .POST else {
            return .answer(
                GatewayResponse(status: 405, headers: [("Allow", "POST")], body: "", contentType: "text/plain"))
        }
        let type = request.head.fields.first("Content-Type").map {
            String($0.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard type == "application/json" else {
            return .answer(refusal("invalid_client_metadata", "the body must be application/json", ctx))
        }
        services.readOwnBody(request.exchange, ctx, limit: ClientIDMetadataDocument.maxSize) { body in
            let id = ClientIdentifier.newRegistered().text
            let document: ClientIDMetadataDocument
            do throws(ClientIDMetadataDocument.Refusal) {
                document = try ClientIDMetadataDocument(registration: body, clientID: id)
            } catch {
                // RFC 7591 §3.2.2: a redirect URI's own error code.
                let code = error.description.contains("redirect") ? "invalid_redirect_uri" : "invalid_client_metadata"
                return request.answer(refusal(code, error.description, ctx))
            }
            let kept = Array(JSONSerializer.serialize(.object(document.registeredMetadata)).utf8)
            server.grants.register(id, metadata: kept, ttl: AuthorizationServerConfig.registrationTTL) { stored in
                guard case .success(true) = stored else {
                    return request.answer(
                        refusal("temporarily_unavailable", "the server cannot register clients right now", ctx))
                }
                request.answer(created(document, id: id))
            }
        }
        return .suspend
    }

    /// RFC 7591 §3.2.1: the client's id and the metadata as registered.
    private func created(_ document: ClientIDMetadataDocument, id: String) -> GatewayResponse {
        var o = document.registeredMetadata
        o["client_id"] = .string(id)
        o["client_id_issued_at"] = .number(String(services.wallClock.seconds))
        var r = GatewayResponse(
            status: 201, headers: [("Pragma", "no-cache")], body: JSONSerializer.serialize(.object(o)),
            contentType: "application/json")
        r.detail = "authorization server: client registered (\(id))"
        return r
    }

    private func refusal(_ code: String, _ description: String, _ ctx: RequestContext) -> GatewayResponse {
        server.hub.refused(endpoint: "register", error: code)
        let body = JSONObject(["error": .string(code), "error_description": .string(description)])
        var r = GatewayResponse(
            status: code == "temporarily_unavailable" ? 503 : 400, body: JSONSerializer.serialize(.object(body)),
            contentType: "application/json")
        r.detail = "authorization server: registration refused: \(code): \(description)"
        r.reason = code
        return r
    }
}
