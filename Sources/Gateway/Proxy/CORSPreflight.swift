import Reactor

/// A CORS preflight request (Fetch §3.2.2 "CORS-preflight request"): OPTIONS with an `Origin`
/// and an `Access-Control-Request-Method`, and no body. Browsers send it without credentials
/// and without a body, so a route that requires credentials would refuse it and break every
/// cross-origin call; with `cors_preflight: allow` it goes upstream unauthenticated, stripped
/// of every credential (`RouteResolver.build` with `preflight`), and the upstream answers for
/// its own CORS policy. Any other OPTIONS request — one with a body included — is checked like
/// every request, so the option cannot carry a payload or an unchecked credential upstream.
enum CORSPreflight {
    /// `hasContent`: the request carries a body (`RoutedRequest.hasContent`: on HTTP/2 any
    /// DATA frame, with or without a Content-Length). Fetch §3.2.2: a preflight never does,
    /// so an OPTIONS with content is judged like every other request.
    static func matches(_ head: HTTPRequestHead, hasContent: @autoclosure () -> Bool) -> Bool {
        guard head.method == .OPTIONS, !hasContent() else { return false }
        let f = head.fields
        guard let origin = f.first("Origin"), !origin.isEmpty,
            let method = f.first("Access-Control-Request-Method"), !method.isEmpty
        else { return false }
        return true
    }

    /// Request headers a forwarded preflight never carries: a browser's preflight has no
    /// credentials (Fetch §4.8 step 1: "credentials mode is omit"), so any such header is a
    /// client's attempt to pass one upstream unverified.
    static let credentialHeaders: [[UInt8]] = ["authorization", "proxy-authorization", "dpop", "cookie"].map {
        Array($0.utf8)
    }
}
