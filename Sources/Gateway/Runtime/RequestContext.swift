import Reactor

/// What the pipeline knows about one request once it is routed; carried to the access log.
struct RequestContext {
    var requestID: String
    var start: Double
    var method: String
    var path: String
    var route: String
    /// Metrics id of the route (-1: no route).
    var routeID: Int
}
