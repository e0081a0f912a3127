import Reactor

/// Where every request enters, before any route's chain (not a stage: it runs for every
/// request and makes what the stages read): whether its peer is a trusted proxy, and so which
/// of its X-Forwarded-* and X-Request-Id fields are believed; the request's context (its id,
/// what the gateway says of the client upstream) and its trace start here.
struct TrustEntry {
    let services: WorkerServices

    /// Whether the connection's peer is a trusted proxy, decided once per connection and
    /// config generation.
    func peerTrusted(_ connection: ClientConnection) -> Bool {
        guard services.current.hasTrustedProxies else { return false }
        let memo = ConnectionMemo.of(connection)
        if memo.trustGeneration != services.current.generation {
            memo.peerTrusted = services.config.trustedProxies.contains { $0.contains(connection.peer) }
            memo.trustGeneration = services.current.generation
        }
        return memo.peerTrusted
    }

    /// The request's context. A client's own X-Forwarded-* and X-Request-Id are read only if
    /// it is a trusted proxy.
    func context(_ ex: ServerExchange, trusted: Bool, host: String?, start: Double) -> RequestContext {
        let fields = ex.head.fields
        let scheme = ex.connection.isTLS ? "https" : "http"
        let ids = services.ids
        let forwarded =
            trusted
            ? ForwardedHeaders.compute(
                .init(
                    peer: ex.connection.peer, peerTrusted: true, scheme: scheme, host: host,
                    xForwardedFor: fields.values("X-Forwarded-For"),
                    xForwardedProto: fields.first("X-Forwarded-Proto"),
                    xForwardedHost: fields.first("X-Forwarded-Host"), xRequestID: fields.first("X-Request-Id")),
                newRequestID: ids.next)
            : ForwardedHeaders.untrusted(peer: ex.connection.peer, scheme: scheme, host: host, requestID: ids.next())
        let ctx = RequestContext(forwarded: forwarded, start: start, method: ex.head.methodName)
        ctx.behindTrustedProxy = trusted
        if let tracer = services.tracer {
            (ctx.tracing.trace, ctx.tracing.dropClientContext) = tracer.begin(
                fields, trusted: trusted, peer: ex.connection.peer, startNanos: Tracer.nowNanos())
            // The calls made while this request is handled are its (Tracer+Calls).
            tracer.current = ctx.trace
        }
        return ctx
    }
}

extension ConnectionMemo {
    /// What the gateway keeps for this client connection (made on first use).
    static func of(_ connection: ClientConnection) -> ConnectionMemo {
        if let memo = connection.context.map({ unsafeDowncast($0, to: ConnectionMemo.self) }) { return memo }
        let memo = ConnectionMemo()
        connection.context = memo
        return memo
    }
}
