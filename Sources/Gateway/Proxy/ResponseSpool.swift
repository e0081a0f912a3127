import Reactor

/// The part of one answer that waits on disk for a client that is behind (`ClientWriter`):
/// appended to as the upstream sends, sent on as the client takes what it has, then the
/// answer's trailers and its end. Made only when an answer falls behind.
final class ResponseSpool {
    private let file: BodySpool
    /// Unowned: the writer owns its spool, and the exchange its writer.
    private unowned(unsafe) let writer: ClientWriter
    private unowned(unsafe) let owner: ProxyExchange
    /// The upstream's answer is complete while the spool still holds part of it.
    var ended = false
    /// Its trailers, which wait for the spool too.
    var trailers: HTTP1Fields?
    private var refillArmed = false
    private var refilling = false
    private var refillAgain = false

    init(_ file: BodySpool, writer: ClientWriter) {
        self.file = file
        self.writer = writer
        owner = writer.owner
    }

    /// Bytes stored and not yet sent.
    var pending: Int { file.pending }

    /// Stores `chunk`: past the response's or the process's disk cap the upstream is paused;
    /// a write that fails cuts the answer.
    func append(_ chunk: BodyChunk) {
        switch file.append(chunk) {
        case .stored:
            break
        case .full:
            if !owner.paused { owner.pauseForClient() }
        case .failed:
            writer.services.proxying.spoolBudget?.countFailure()
            writer.services.log.warning(
                "response spool write failed; the response is cut",
                metadata: ["request_id": "\(writer.context.requestID)"])
            owner.abort(detail: "spool write failed")
            return
        }
        armRefill()
    }

    private func armRefill() {
        guard !refillArmed else { return }
        refillArmed = true
        writer.responder.whenDrained { [weak self] in
            self?.refillArmed = false
            self?.refill()
        }
    }

    /// The client took what it had: the next part from the spool, and once the spool is
    /// empty, the upstream resumed (if a cap paused it) or the answer ended (if it is whole).
    /// `whenDrained` may call back at once; the loop keeps that from recursing.
    private func refill() {
        if refilling {
            refillAgain = true
            return
        }
        refilling = true
        defer { refilling = false }
        repeat {
            refillAgain = false
            guard !owner.isDone, writer.spool === self else { return }
            if file.pending > 0 {
                guard let chunk = file.next(max: writer.services.config.limits.responseBuffer) else {
                    writer.services.proxying.spoolBudget?.countFailure()
                    owner.abort(detail: "spool read failed")
                    return
                }
                writer.responder.write(chunk)
            }
            if file.pending > 0 {
                armRefill()
                continue
            }
            owner.clientDrained()
            if ended {
                if let trailers { writer.responder.trailers(trailers) }
                let responder = writer.responder
                owner.finish(status: owner.status)
                // The answer is whole: finishing may free the exchange and this spool with
                // it, so nothing of either is read after it.
                responder.finish()
                return
            }
        } while refillAgain
    }
}
