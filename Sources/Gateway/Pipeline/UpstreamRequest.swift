import Reactor

/// The upstream request an admitted request becomes (built by `ProxyStage`).
extension RouteResolver.Forwarding {
    /// The upstream request of an admitted request: the client's fields and forwarded
    /// headers, and its own body unless the admission replaced it (a form with its token
    /// removed).
    /// `spooled`: the body as request buffering read it whole (`RequestBufferingStage`);
    /// `now`: the wall clock's seconds, a signed request's `created`; `firstTry`: false when a
    /// DPoP nonce challenge is answered (the stage that answers it is in place already).
    func request(
        _ admission: Admission, ex: ServerExchange, ctx: RequestContext, spooled: RequestBody? = nil, now: Int64,
        firstTry: Bool = true
    ) -> UpstreamCall.Request {
        var identity = admission.identity
        if !plan.certificateHeaders.isEmpty, let certificate = ex.connection.clientCertificate {
            for (header, field) in plan.certificateHeaders {
                if let value = field.value(of: certificate) { identity.append((header, value)) }
            }
        }
        if let upstreamProof = admission.upstreamProof {
            let scheme = plan.upstream?.config.tls == nil ? "http" : "https"
            // htu names the URL the upstream sees: its Host header (host_header may make that the
            // client's or a fixed name); nonces are kept per upstream authority.
            if let proof = upstreamProof.proof(
                method: ex.head.methodName, scheme: scheme, host: upstreamHost, nonceKey: plan.upstreamAuthority,
                target: target)
            {
                identity.append(("DPoP", proof))
            }
            if firstTry {
                // The first try: the upstream's nonces are the gateway's to answer, and a
                // request without a body may go once more with one (RFC 9449 §8, §9).
                ctx.response.dropped.append("DPoP-Nonce")
                let retry: (() -> UpstreamCall.Request)?
                // Not an upgrade: its second try would need the upgrade's own request again.
                if !ctx.kind.isUpgrade, UpstreamDPoPExchange.mayRetry(ex.head, body: admission.body ?? ex.body) {
                    retry = { [self, unowned ex, unowned ctx] in
                        self.request(admission, ex: ex, ctx: ctx, now: now, firstTry: false)
                    }
                } else {
                    retry = nil
                }
                ctx.response.install(
                    UpstreamDPoPExchange(nonces: upstreamProof.nonces, authority: plan.upstreamAuthority, retry: retry))
            }
        }
        var out = request(
            headers: ex.head.fields, listsConnectionOptions: ex.head.listsConnectionOptions,
            forwarded: ctx.forwarded, identity: identity,
            session: admission.dropsCredential, preflight: admission.preflight,
            body: spooled ?? admission.body ?? ex.body,
            trace: ctx.trace, dropTraceContext: ctx.tracing.dropClientContext,
            grpcTimeout: ctx.state[GRPCDeadline.Key.self]?.value)
        if let signing = plan.upstream?.config.sign {
            // Last: over the fields as they go (identity headers, Host, forwarded headers).
            UpstreamSigning.sign(
                &out, signing, method: ex.head.methodName, scheme: plan.upstream?.config.tls == nil ? "http" : "https",
                authority: upstreamHost, identity: identity, now: now)
        }
        return out
    }
}
