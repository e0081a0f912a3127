import Reactor

/// How the gateway answers a request for a Protected Resource Metadata document (RFC 9728
/// §3.1–§3.2): "using the HTTP GET method", 200 with `application/json`. Public on purpose:
/// no token is asked for, since a client reads it to learn how to get one (§5.1).
extension ProtectedResourceDocument {
    /// The access log's route for these answers.
    static let logRoute = "protected_resource_metadata"

    static let allow = "GET, HEAD, OPTIONS"

    /// `Cache-Control`: the document changes only with a config reload, and a client fetches
    /// it after each 401. Five minutes spares those fetches while a reload that changes the
    /// issuers or scopes reaches every client soon after; an hour would keep sending clients to
    /// an authorization server the route may no longer accept. `s-maxage` lets a shared cache
    /// keep it for clients that send their token with every request, this one included (MCP
    /// clients do): RFC 9111 §3.5 allows that with `public`, `s-maxage` or `must-revalidate`,
    /// and `s-maxage` says no more than that (a 200 is cacheable anyway, so `public` adds
    /// nothing else).
    static let cacheControl = "max-age=300, s-maxage=300"

    /// CORS: the document holds nothing secret, and browser-based clients (MCP inspectors, web
    /// apps) must read it cross-origin. No credentials are involved, so `*` is enough.
    static let corsHeaders = [("Access-Control-Allow-Origin", "*")]

    /// 200 with the document for GET and HEAD; 204 to a CORS preflight (a browser client that
    /// sends a header of its own, such as `MCP-Protocol-Version`, asks one first); 405 with
    /// `Allow` for any other method.
    func response(to method: HTTPMethod?, requestID: String) -> GatewayResponse {
        switch method {
        case .GET, .HEAD:
            var r = GatewayResponse(
                status: 200,
                headers: Self.corsHeaders + [
                    ("Cache-Control", Self.cacheControl), ("X-Content-Type-Options", "nosniff")
                ],
                body: body, contentType: "application/json", detail: "metadata of \(metadata.resource.uri)")
            r.noStore = false
            return r
        case .OPTIONS:
            var r = GatewayResponse(
                status: 204,
                headers: Self.corsHeaders + [
                    ("Access-Control-Allow-Methods", Self.allow), ("Access-Control-Allow-Headers", "*"),
                    ("Access-Control-Max-Age", "3600")
                ],
                body: "", contentType: "text/plain", detail: "metadata preflight")
            r.noStore = false
            return r
        default:
            return ErrorResponse.make(
                405, error: "invalid_request", description: "method not allowed: use GET", requestID: requestID,
                headers: [("Allow", Self.allow)] + Self.corsHeaders)
        }
    }
}
