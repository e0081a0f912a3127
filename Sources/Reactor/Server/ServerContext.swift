/// What a server's connections share: the options in force (replaced by `apply`), the
/// parser limits derived from them, the `Date` cache, the gateway's handler and the list
/// of idle connections the server may reclaim. One per `HTTPServer`; loop-thread only.
final class ServerContext {
    var options: HTTPServerOptions {
        didSet { limits = Self.limits(options) }
    }
    private(set) var limits: HTTP1Limits
    let dates = HTTPDateCache()
    /// Kept by the handlers as their connections go idle and busy; the server reclaims from
    /// its older end at the connection limit.
    let idle = IdleConnectionList<ServerConnection>()
    let handler: (ServerExchange) -> Void

    init(options: HTTPServerOptions, handler: @escaping (ServerExchange) -> Void) {
        self.options = options
        limits = Self.limits(options)
        self.handler = handler
    }

    private static func limits(_ options: HTTPServerOptions) -> HTTP1Limits {
        var limits = HTTP1Limits()
        limits.maxHeaderBytes = options.maxHeaderSize
        return limits
    }
}
