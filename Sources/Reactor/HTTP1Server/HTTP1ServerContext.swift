/// What a server's connections share: the options in force (replaced by `apply`), the
/// parser limits derived from them, the `Date` cache and the gateway's handler. One per
/// `HTTP1Server`; loop-thread only.
final class HTTP1ServerContext {
    var options: HTTPServerOptions {
        didSet { limits = Self.limits(options) }
    }
    private(set) var limits: HTTP1Limits
    let dates = HTTPDateCache()
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
