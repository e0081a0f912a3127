import Reactor

/// Proxy buffering: once the client is `limits.response_buffer` behind, the rest of the
/// upstream's answer goes to a temp file (`ResponseSpool`) and the upstream is read at its
/// own pace, so a slow reader holds a file descriptor and a little memory, not an upstream
/// connection (or an application worker behind it). Past the response's or the process's
/// disk cap the upstream is paused, as without a spool. Streams are never buffered.
extension ProxyExchange {
    /// Whether this answer may be spooled: not on a route with `buffering: false`, and not a
    /// stream whose bytes must reach the client as they come (an event stream, gRPC, an
    /// answer the upstream marks `X-Accel-Buffering: no`, as nginx honours).
    func mayBuffer(_ head: HTTPResponseHead) -> Bool {
        let limits = worker.config.limits
        guard context.buffersResponse, limits.responseSpoolMax > 0, limits.responseSpoolTotal > 0,
            worker.spoolBudget != nil
        else { return false }
        if let type = head.fields.first("content-type")?.lowercased() {
            if type.hasPrefix("text/event-stream") || type.hasPrefix("application/grpc") { return false }
        }
        if let accel = head.fields.first("x-accel-buffering"), accel.lowercased() == "no" { return false }
        return true
    }

    /// Spools `chunk` if the client is behind or the spool already holds bytes (which must
    /// go first); false: the caller writes it to the client.
    func spooled(_ chunk: BodyChunk) -> Bool {
        let limits = worker.config.limits
        if spool == nil {
            // Behind: what waits for the client already fills the buffer (a fast client's
            // output is written out between reads, whatever a read's size).
            guard responder.pendingOutput >= min(limits.responseBuffer, responder.highWater),
                let budget = worker.spoolBudget
            else { return false }
            guard
                let made = ResponseSpool(
                    directory: limits.spoolDirectory, budget: budget, maxBytes: limits.responseSpoolMax)
            else {
                spoolAllowed = false
                worker.spoolBudget?.countFailure()
                return false
            }
            spool = made
        }
        guard let spool else { return false }
        if spool.pending == 0
            && responder.pendingOutput + chunk.count <= min(limits.responseBuffer, responder.highWater)
        {
            return false
        }
        switch spool.append(chunk) {
        case .stored:
            break
        case .full:
            if !paused {
                paused = true
                call?.pause()
            }
        case .failed:
            worker.spoolBudget?.countFailure()
            worker.log.warning(
                "response spool write failed; the response is cut", metadata: ["request_id": "\(context.requestID)"])
            call?.cancel()
            responder.abort()
            finish(status: status, detail: "spool write failed")
            return true
        }
        armRefill()
        return true
    }

    private func armRefill() {
        guard !refillArmed else { return }
        refillArmed = true
        responder.whenDrained { [weak self] in
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
            guard !done, let spool else { return }
            if spool.pending > 0 {
                guard let chunk = spool.next(max: worker.config.limits.responseBuffer) else {
                    worker.spoolBudget?.countFailure()
                    call?.cancel()
                    responder.abort()
                    finish(status: status, detail: "spool read failed")
                    return
                }
                responder.write(chunk)
            }
            if spool.pending > 0 {
                armRefill()
                continue
            }
            if paused {
                paused = false
                call?.resume()
            }
            if upstreamEnded {
                if let trailers = heldTrailers { responder.trailers(trailers) }
                let responder = self.responder
                finish(status: status)
                responder.finish()
            }
        } while refillAgain
    }
}
