internal import CShim

/// A client-side TLS context (OpenSSL `SSL_CTX`, TLS 1.2+) that verifies servers: against
/// the CA certificates of one PEM file, or the system's. Owns the context and frees it in
/// deinit; each connection made with it holds its own `SSL` object. Loop-thread only, like
/// the connections that use it.
final class TLSClientContext {
    let ctx: UnsafeMutableRawPointer

    /// `caFile` nil trusts the system's CA certificates. `insecureSkipTLSVerify` turns off
    /// every certificate check (chain and name): anyone on the path can then read and change
    /// the traffic. For tests and emergencies only.
    init(caFile: String?, insecureSkipTLSVerify: Bool) throws(ReactorError) {
        var err = [CChar](repeating: 0, count: 512)
        guard let ctx = tg_tls_client_ctx_new(caFile, insecureSkipTLSVerify ? 1 : 0, &err, err.count) else {
            throw ReactorError("TLS: \(String(nulTerminated: err))")
        }
        self.ctx = ctx
    }

    deinit { tg_tls_ctx_free(ctx) }
}
