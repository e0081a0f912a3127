import COpenSSL
import CShim
import Glibc

@testable import Reactor

/// The client side of TLS for `TestClient`: a blocking SSL session on its socket, from a
/// client context that trusts `caFile` (the test PKI's CA). Owns the SSL object and the
/// context; the socket stays the client's.
final class TestTLSSession {
    private let ctx: UnsafeMutableRawPointer
    private let ssl: OpaquePointer

    /// Runs the handshake on the connected blocking socket `fd`.
    init(fd: Int32, caFile: String) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let ctx = tg_tls_client_ctx_new(caFile, 0, &err, err.count) else {
            throw ReactorError(String(nulTerminated: err))
        }
        self.ctx = ctx
        guard let ssl = SSL_new(OpaquePointer(ctx)) else {
            tg_tls_ctx_free(ctx)
            throw ReactorError("SSL_new failed")
        }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1, SSL_connect(ssl) == 1 else {
            let code = ERR_get_error()
            ERR_clear_error()
            throw ReactorError("TLS handshake failed (\(code))")
        }
    }

    deinit {
        SSL_free(ssl)
        tg_tls_ctx_free(ctx)
    }

    /// SSL_write: bytes written, or -1.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))
        ERR_clear_error()
        return n > 0 ? Int(n) : -1
    }

    /// SSL_read: bytes read, 0 at a clean or unclean end, -1 on a timeout or error.
    func read(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        let n = SSL_read(ssl, bytes.baseAddress, Int32(bytes.count))
        if n > 0 { return Int(n) }
        let code = SSL_get_error(ssl, n)
        let savedErrno = errno
        ERR_clear_error()
        if code == SSL_ERROR_ZERO_RETURN { return 0 }
        if code == SSL_ERROR_SYSCALL && (savedErrno == 0 || savedErrno == ECONNRESET) { return 0 }
        if code == SSL_ERROR_SSL { return 0 }  // OpenSSL 3: an end without close_notify
        return -1
    }

    /// Whether the server's last act was a close_notify.
    var receivedCloseNotify: Bool { (SSL_get_shutdown(ssl) & Int32(SSL_RECEIVED_SHUTDOWN)) != 0 }
}

extension TestClient {
    /// A client that connected to `port` and finished a TLS handshake trusting `caFile`.
    convenience init(port: UInt16, caFile: String, timeout: Double = 5) throws {
        try self.init(port: port, timeout: timeout)
        tls = try TestTLSSession(fd: fd, caFile: caFile)
    }
}
