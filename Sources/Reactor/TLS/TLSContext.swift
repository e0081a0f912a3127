internal import CShim

/// A server-side TLS context (OpenSSL `SSL_CTX`, TLS 1.2+) loaded from PEM files.
/// Owns the context; shared read-only by every worker's server.
public final class TLSContext: @unchecked Sendable {
    let ctx: UnsafeMutableRawPointer

    public init(certificateFile: String, privateKeyFile: String) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let ctx = tg_tls_server_ctx_new(certificateFile, privateKeyFile, &err, err.count) else {
            throw ReactorError(String(cString: err))
        }
        self.ctx = ctx
    }

    deinit { tg_tls_ctx_free(ctx) }
}
