internal import CShim

/// Where a client handshake stands after one step.
enum TLSHandshakeStep: Equatable {
    /// Done; `resumed`: the server took the offered session (no certificate exchange).
    case done(resumed: Bool)
    case wantsReadable
    case wantsWritable
    /// The handshake failed: the certificate verify error ("certificate has expired") or
    /// OpenSSL's reason, for the log only.
    case failed(String)
}

extension TLSConnectionIO {
    /// The client side of TLS on a connected non-blocking socket to an upstream: SNI and
    /// name check from `context`, the slot's session offered for resumption.
    static func client(context: UpstreamTLSContext, fd: Int32, slot: TLSSessionSlot) throws(ReactorError)
        -> TLSConnectionIO
    {
        var err = [CChar](repeating: 0, count: 512)
        guard
            let conn = tg_tls_client_conn_new(
                context.ctx, fd, context.serverName, context.checksName ? 1 : 0,
                slot.slot, &err, err.count)
        else {
            throw ReactorError("TLS: \(String(nulTerminated: err))")
        }
        return TLSConnectionIO(owning: conn, slot: slot)
    }

    /// Decrypted or read-ahead bytes wait inside OpenSSL.
    var holdsInput: Bool { tg_tls_conn_pending(conn) != 0 }

    /// One step of the client handshake (SSL_do_handshake), driven by socket readiness.
    func handshake() -> TLSHandshakeStep {
        var status: Int32 = 0
        if tg_tls_conn_handshake(conn, &status) == 1 { return .done(resumed: tg_tls_conn_session_reused(conn) != 0) }
        switch Int(status) {
        case TG_TLS_WANT_READ: return .wantsReadable
        case TG_TLS_WANT_WRITE: return .wantsWritable
        default:
            let reason = String(cString: tg_tls_conn_error(conn))
            failure = reason
            return .failed(reason)
        }
    }
}

/// The newest TLS session of one pool's connections (`tg_tls_session_slot`), offered on
/// its next connection so that it resumes instead of running a full handshake (RFC 8446
/// §2.2). Owns the slot and the session in it. Loop-thread only, like the pool.
final class TLSSessionSlot {
    let slot: OpaquePointer

    init() {
        guard let slot = tg_tls_session_slot_new() else { fatalError("tg_tls_session_slot_new: out of memory") }
        self.slot = slot
    }

    deinit { tg_tls_session_slot_free(slot) }

    var holdsSession: Bool { tg_tls_session_slot_filled(slot) != 0 }
}
