internal import CShim
import Glibc

/// TLS on one socket — an accepted one (server side, TLS 1.2+ from a `TLSContext`) or an
/// upstream connection (client side, `TLSConnectionIO+Client.swift`): `SSL_read` and
/// `SSL_write` on the fd through the `tg_tls_conn_*` shim. The handshake happens inside the
/// first reads, so it counts against the connection's header deadline; OpenSSL's WANT_READ
/// and WANT_WRITE become the `needsReadable` / `needsWritable` stops that the connection
/// turns into read or write interest. Owns its `tg_tls_conn` (and so the SSL object),
/// freed once in `deinit`, with the connection; the fd stays the connection's.
final class TLSConnectionIO: ConnectionIO {
    let conn: OpaquePointer
    /// Client side: where the pool's sessions go; kept alive as long as the SSL object.
    private let sessionSlot: TLSSessionSlot?
    var failure: String?
    /// Most plaintext asked of one SSL_read, and offered to one SSL_write: one record.
    static let recordSize = 16 << 10

    init(context: TLSContext, fd: Int32) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let conn = tg_tls_conn_new(context.ctx, fd, &err, err.count) else {
            throw ReactorError(String(nulTerminated: err))
        }
        self.conn = conn
        sessionSlot = nil
    }

    /// Takes ownership of a connection made by `tg_tls_client_conn_new` with `slot`.
    init(owning conn: OpaquePointer, slot: TLSSessionSlot?) {
        self.conn = conn
        sessionSlot = slot
    }

    deinit { tg_tls_conn_free(conn) }

    /// The handshake chose HTTP/2 in ALPN (known once the first application bytes arrive).
    var negotiatedH2: Bool { tg_tls_conn_alpn_is_h2(conn) != 0 }

    /// The client's verified certificate (server side, once the handshake is done).
    var clientCertificate: ClientCertificate? {
        var digest = [UInt8](repeating: 0, count: 32)
        var subject = [CChar](repeating: 0, count: 1024)
        var uris = [CChar](repeating: 0, count: 2048)
        guard tg_tls_conn_client_certificate(conn, &digest, &subject, subject.count, &uris, uris.count) == 1 else {
            return nil
        }
        let list = String(nulTerminated: uris).split(separator: "\n").map(String.init)
        return ClientCertificate(sha256: digest, subject: String(nulTerminated: subject), uris: list)
    }

    /// Reads record after record straight into `input`'s free space until OpenSSL wants
    /// the socket, has handed over all it read ahead, or `room` is used up; in the last
    /// case decrypted bytes may be left inside OpenSSL, which `buffered` reports.
    func read(into input: ByteQueue, room: Int) -> ConnectionRead {
        var total = 0
        var status: Int32 = 0
        while total < room {
            let want = min(room - total, Self.recordSize)
            let read = input.appendInPlace(upTo: want) { space in
                Int(tg_tls_conn_read(conn, space.baseAddress, Int32(space.count), &status))
            }
            guard let n = read else {
                failure = "out of memory for TLS input"
                return ConnectionRead(bytes: total, stop: .failed)
            }
            guard n > 0 else { break }
            total += n
            // With read-ahead (server and upstream contexts set it) OpenSSL read what the socket held; asking
            // again would cost a read() that meets an empty socket. Level-triggered read
            // interest brings the reader back if more arrived meanwhile.
            if tg_tls_conn_drained(conn) != 0 { return ConnectionRead(bytes: total, stop: .open) }
        }
        if total >= room {
            return ConnectionRead(bytes: total, stop: tg_tls_conn_pending(conn) != 0 ? .buffered : .open)
        }
        switch Int(status) {
        case TG_TLS_WANT_READ: return ConnectionRead(bytes: total, stop: .open)
        case TG_TLS_WANT_WRITE: return ConnectionRead(bytes: total, stop: .needsWritable)
        case TG_TLS_CLOSED: return ConnectionRead(bytes: total, stop: .end)
        default:
            failure = String(cString: tg_tls_conn_error(conn))
            return ConnectionRead(bytes: total, stop: .failed)
        }
    }

    /// Offers the front of `output` one record at a time (small pieces, such as a response
    /// head and its body, pulled up into one record rather than one record each).
    func write(from output: ByteQueue) -> ConnectionWrite {
        var total = 0
        while true {
            let length = output.count
            guard length > 0 else { return ConnectionWrite(bytes: total, stop: .done) }
            let offer = min(length, Self.recordSize)
            guard let bytes = output.pullUp(offer) else {
                failure = "out of memory for TLS output"
                return ConnectionWrite(bytes: total, stop: .failed)
            }
            var status: Int32 = 0
            let n = tg_tls_conn_write(conn, bytes.baseAddress, Int32(offer), &status)
            if n > 0 {
                output.drain(Int(n))
                total += Int(n)
                continue
            }
            switch Int(status) {
            case TG_TLS_WANT_WRITE: return ConnectionWrite(bytes: total, stop: .blocked)
            case TG_TLS_WANT_READ: return ConnectionWrite(bytes: total, stop: .needsReadable)
            case TG_TLS_CLOSED:
                failure = "TLS write: the peer closed the connection"
                return ConnectionWrite(bytes: total, stop: .failed)
            default:
                failure = String(cString: tg_tls_conn_error(conn))
                return ConnectionWrite(bytes: total, stop: .failed)
            }
        }
    }

    func endOutput() { _ = tg_tls_conn_shutdown(conn) }
}
