import OAuth

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
