import JOSE

/// `auth: none`: the request is admitted as it is, with no identity (what a client sent as
/// identity headers is still stripped when the upstream request is built).
final class PublicRouteStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        if request.admission == nil {
            request.admission = Admission(identity: [], session: false, body: nil, claims: JSONObject())
        }
        return .proceed
    }
}
