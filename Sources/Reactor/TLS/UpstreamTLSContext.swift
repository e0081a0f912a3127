internal import CShim

/// How a pool speaks TLS to one HTTPS upstream: a client `SSL_CTX` (TLS 1.2+) that trusts
/// `ca_file` (or the system's CAs), presents a client certificate when one is set (mTLS),
/// and the name sent as SNI (RFC 6066 §3) and checked against the certificate (RFC 6125;
/// an IP address is checked against the certificate's IP SANs and never sent as SNI).
///
/// Built once per config load from the files on disk (a reload picks up rotated files)
/// and shared read-only by every worker's pool for that upstream; OpenSSL allows `SSL_new`
/// on one context from several threads. Owns the context, freed once in `deinit`.
/// Equal only to itself, so a reloaded context gets new pools.
public final class UpstreamTLSContext: @unchecked Sendable, Equatable {
    let ctx: UnsafeMutableRawPointer
    /// SNI and the name the certificate must carry.
    public let serverName: String
    /// False only with `insecureSkipTLSVerify`.
    let checksName: Bool
    public let insecureSkipTLSVerify: Bool
    /// ALPN offers only `h2`: the upstream speaks HTTP/2 (RFC 9113 §3.2).
    public let http2: Bool

    /// `caFile` nil trusts the system's CA certificates. `certFile` and `keyFile` (PEM,
    /// both or neither) are the client certificate for upstreams that require one.
    /// `insecureSkipTLSVerify` turns off every certificate check (chain, dates and name).
    /// `http2`: ALPN offers `h2` alone.
    public init(
        serverName: String, caFile: String?, certFile: String?, keyFile: String?,
        insecureSkipTLSVerify: Bool, http2: Bool = false
    ) throws(ReactorError) {
        precondition((certFile == nil) == (keyFile == nil), "cert_file and key_file go together")
        var err = [CChar](repeating: 0, count: 512)
        guard
            let ctx = tg_tls_upstream_ctx_new(caFile, certFile, keyFile, insecureSkipTLSVerify ? 1 : 0, &err, err.count)
        else {
            throw ReactorError(String(nulTerminated: err))
        }
        if http2 { tg_tls_client_ctx_offer_h2(ctx) }
        self.ctx = ctx
        self.http2 = http2
        self.serverName = serverName
        checksName = !insecureSkipTLSVerify
        self.insecureSkipTLSVerify = insecureSkipTLSVerify
    }

    deinit { tg_tls_ctx_free(ctx) }

    public static func == (a: UpstreamTLSContext, b: UpstreamTLSContext) -> Bool { a === b }
}
