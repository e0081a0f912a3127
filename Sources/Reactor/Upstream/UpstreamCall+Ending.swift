/// The one end of every exchange: the connection back to its pool or closed, the body
/// abandoned, the delegate told once (never from inside `start()`).
extension UpstreamCall {
    /// Ends the exchange once: the connection back to the pool (`reusable`) or closed, the
    /// body abandoned, then the delegate told (`nil`: complete).
    func finish(_ failure: UpstreamFailure?, reusable: Bool = false) {
        guard case .report(let afterHead) = machine.finish() else { return }
        connectTimer?.cancel()
        connectTimer = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        if let conn = connection {
            connection = nil
            conn.served += 1
            pool.release(conn, reusable: failure == nil && reusable)
        }
        if h2 != nil { h2Finish() }
        abandonBody()
        body = nil
        bodySink?.call = nil
        bodySink = nil
        let delegate = self.delegate.take()
        if starting {
            // Never from inside start(): the caller has not finished setting up. A cancel()
            // before the next loop turn still silences it.
            deferredReport = { Self.report(failure, to: delegate, afterHead: afterHead) }
            pool.loop.execute { [self] in
                deferredReport.take()?()
            }
        } else {
            Self.report(failure, to: delegate, afterHead: afterHead)
        }
        selfRetain = nil
    }

    static func report(_ failure: UpstreamFailure?, to delegate: UpstreamCallDelegate?, afterHead: Bool) {
        switch failure {
        case nil: delegate?.upstreamComplete()
        case .cancelled?: break
        case let failure?: delegate?.upstreamFailed(failure, afterHead: afterHead)
        }
    }
}
