import Reactor

/// Proxy buffering: once the client is `limits.response_buffer` behind, the rest of the
/// upstream's answer goes to a temp file (`BodySpool`) and the upstream is read at its
/// own pace, so a slow reader holds a file descriptor and a little memory, not an upstream
/// connection (or an application worker behind it). Past the response's or the process's
/// disk cap the upstream is paused, as without a spool. Streams are never buffered.
extension ProxyExchange {
    /// Whether this answer may be spooled, as far as the head's route and limits say: not on a
    /// route with `buffering: false`, nor with spooling off. Flags only: this runs on every
    /// proxied answer, and most never fall behind; what the answer is (`isStream`) is read
    /// only when a spool would start.
    func mayBuffer(_ head: HTTPResponseHead) -> Bool {
        guard buffersResponse, services.spoolBudget != nil else { return false }
        guard services.config.limits.responseSpoolMax > 0, services.config.limits.spoolTotal > 0 else { return false }
        spoolFields = head.fields
        return true
    }

    /// A stream whose bytes must reach the client as they come: an event stream, gRPC or
    /// gRPC-Web (`GRPCCall`'s reading of the type), or an answer the upstream marks
    /// `X-Accel-Buffering: no` (as nginx honours).
    static func isStream(_ fields: HTTP1Fields) -> Bool {
        if GRPCCall(fields) != nil { return true }
        var stream = false
        fields.forEachValue(named: "content-type") { value in
            if HeaderRules.startsCaseless(value, "text/event-stream") { stream = true }
        }
        fields.forEachValue(named: "x-accel-buffering") { value in
            if value.count == 2 && HeaderRules.startsCaseless(value, "no") { stream = true }
        }
        return stream
    }

    /// Spools `chunk` if the client is behind or the spool already holds bytes (which must
    /// go first); false: the caller writes it to the client.
    func spooled(_ chunk: BodyChunk) -> Bool {
        // One number of the limits, not a copy of them all (a copy retains the strings in it).
        let responseBuffer = services.config.limits.responseBuffer
        if spool == nil {
            // Behind: what waits for the client already fills the buffer (a fast client's
            // output is written out between reads, whatever a read's size).
            guard responder.pendingOutput >= min(responseBuffer, responder.highWater),
                let budget = services.spoolBudget
            else { return false }
            let limits = services.config.limits
            if let fields = spoolFields {
                spoolFields = nil
                if Self.isStream(fields) {
                    spoolAllowed = false
                    return false
                }
            }
            guard
                let made = BodySpool(
                    directory: limits.spoolDirectory, budget: budget, maxBytes: limits.responseSpoolMax)
            else {
                spoolAllowed = false
                services.spoolBudget?.countFailure()
                return false
            }
            spool = made
        }
        guard let spool else { return false }
        if spool.pending == 0
            && responder.pendingOutput + chunk.count <= min(responseBuffer, responder.highWater)
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
            services.spoolBudget?.countFailure()
            services.log.warning(
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
                guard let chunk = spool.next(max: services.config.limits.responseBuffer) else {
                    services.spoolBudget?.countFailure()
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
