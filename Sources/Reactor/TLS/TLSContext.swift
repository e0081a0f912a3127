internal import CShim

/// A server-side TLS context (OpenSSL `SSL_CTX`, TLS 1.2+) loaded from PEM files, with
/// ALPN: `h2` then `http/1.1` when `http2`, else `http/1.1` alone. Owns the context;
/// shared read-only by every worker's server.
public final class TLSContext: @unchecked Sendable {
    let ctx: UnsafeMutableRawPointer
    /// Connections may choose HTTP/2 in ALPN.
    public let http2: Bool

    public init(certificateFile: String, privateKeyFile: String, http2: Bool = true) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let ctx = tg_tls_server_ctx_new(certificateFile, privateKeyFile, &err, err.count) else {
            throw ReactorError(String(nulTerminated: err))
        }
        self.ctx = ctx
        self.http2 = http2
        tg_tls_server_ctx_set_alpn(ctx, http2 ? 1 : 0)
    }

    deinit { tg_tls_ctx_free(ctx) }
}
