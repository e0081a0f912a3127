import Reactor

/// A CORS preflight request (Fetch §3.2.2 "CORS-preflight request"): OPTIONS with an `Origin`
/// and an `Access-Control-Request-Method`. Browsers send it without credentials, so a route
/// that requires them would refuse it and break every cross-origin call; with
/// `cors_preflight: allow` it goes upstream unauthenticated, and the upstream answers for its
/// own CORS policy. Any other OPTIONS request is checked like every request.
enum CORSPreflight {
    static func matches(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .OPTIONS else { return false }
        let f = head.fields
        guard let origin = f.first("Origin"), !origin.isEmpty,
              let method = f.first("Access-Control-Request-Method"), !method.isEmpty else { return false }
        return true
    }
}
