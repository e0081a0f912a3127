internal import CNghttp2

/// Responses on HTTP/2: the head as a HEADERS frame (`HTTP2ResponseFields`), the body
/// through the stream's data provider, which nghttp2 frames as the client's windows allow.
/// No body for HEAD, 204 and 304 (RFC 9110 §6.4.1); a streamed body shorter than the
/// content-length it announced ends with RST_STREAM, so the client can tell it was cut.
/// A gRPC trailers-only answer is its HEADERS frame alone, with END_STREAM and without
/// `content-length` (PROTOCOL-HTTP2.md, "Trailers-Only").
/// `close` has no meaning on a stream and is ignored: the connection serves the others.
/// Each call acts only while the stream is on its connection (`handler`, with a session).
extension HTTP2Stream {
    func sendResponse(_ head: HTTPResponseHead, body: [UInt8], close: Bool) {
        guard response == .waiting, let handler, let session = handler.session else { return }
        handler.thread.check()
        let noBody = hasNoBody(head.status)
        let length = Self.announcedLength(head, body: body, noBody: noBody)
        var fields = HTTP2ResponseFields(head, contentLength: length, date: handler.context.dates.fieldLine)
        let withBody = !noBody && !body.isEmpty
        if withBody {
            lastSentAt = LazyDeadline.now()
            output.append(body)
        }
        response = .ended
        submit(session, &fields, withBody: withBody)
        answered(on: handler)
    }

    func startResponse(_ head: HTTPResponseHead, close: Bool) {
        guard response == .waiting, let handler, let session = handler.session else { return }
        handler.thread.check()
        let noBody = hasNoBody(head.status)
        let length: UInt64? =
            head.status == 204 ? nil : head.bodyLength ?? HTTP1ResponseEncoder.contentLength(head)
        var fields = HTTP2ResponseFields(head, contentLength: length, date: handler.context.dates.fieldLine)
        response = .streaming(remaining: noBody ? 0 : length)
        if noBody || length == 0 {
            // Nothing can follow: the head waits for the end, and goes as one HEADERS frame
            // that ends the stream (a gRPC trailers-only answer relayed from an HTTP/2
            // upstream stays one).
            heldHead = fields
            return
        }
        submit(session, &fields, withBody: true)
        handler.drive()
    }

    func sendBody(_ chunk: BodyChunk) {
        guard let handler, case .streaming(let remaining) = response else { return chunk.drop() }
        handler.thread.check()
        // Bytes past the announced length would be a malformed message (RFC 9113 §8.1.1).
        let n = remaining.map { Int(min(UInt64(chunk.count), $0)) } ?? chunk.count
        if output.count == 0 { lastSentAt = LazyDeadline.now() }
        BodyChunk(queue: chunk.queue, count: n).move(to: output)
        if chunk.count > n { chunk.queue.drain(chunk.count - n) }
        if let remaining { response = .streaming(remaining: remaining - UInt64(n)) }
        wake(handler.session)
        handler.drive()
    }

    func endResponse() {
        guard case .streaming(let remaining) = response, let handler, let session = handler.session else { return }
        handler.thread.check()
        response = .ended
        if var fields = heldHead {
            heldHead = nil
            submit(session, &fields, withBody: false)
            return answered(on: handler)
        }
        if let remaining, remaining > 0 {
            nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_INTERNAL_ERROR.rawValue)
        } else {
            wake(session)
        }
        answered(on: handler)
    }

    /// A trailer section for the end of the body (gRPC's status): framed after the last
    /// DATA frame.
    func sendTrailers(_ fields: HTTP1Fields) { trailers = fields }

    /// Ends the stream abnormally (RST_STREAM, RFC 9113 §6.4): the client can tell the
    /// answer is cut; the other streams go on. The responder hears `transportClosed` when
    /// the stream closes.
    func abortResponse() {
        guard !closed, let handler, let session = handler.session else { return }
        handler.thread.check()
        response = .ended
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_INTERNAL_ERROR.rawValue)
        handler.drive()
    }

    func sendInterim(_ head: HTTPResponseHead) {
        guard response == .waiting, let handler, let session = handler.session else { return }
        handler.thread.check()
        if head.status == 100 {
            guard !body.continueSent else { return }
            body.continueSent = true
        }
        var fields = HTTP2ResponseFields(head, contentLength: nil, date: [])
        _ = fields.withList { list, count in
            nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, nil, list, count, nil)
        }
        handler.drive()
    }

    /// Answers a request the engine refuses itself (a malformed or oversized head): the
    /// gateway never sees it. A gRPC call (`grpc`, from what of the head was read) gets
    /// the refusal in its trailers-only form, as the gateway's own refusals do.
    func refuse(status: Int, description: String, grpc: GRPCCall?) {
        guard let grpc else {
            let (head, body) = HTTP1ConnectionHandler.refusal(status: status, description: description)
            return sendResponse(head, body: body, close: false)
        }
        var head = HTTPResponseHead(status: 200)
        for (name, value) in GRPCTrailersOnly.fields(grpc, refusal: status, message: description) {
            head.fields.append(name, value)
        }
        head.trailersOnly = true
        sendResponse(head, body: [], close: false)
    }

    private func submit(_ session: OpaquePointer, _ fields: inout HTTP2ResponseFields, withBody: Bool) {
        var provider = HTTP2Session.dataProvider
        // A failure means the stream is gone (reset meanwhile): nothing goes out, its data
        // provider is never asked, and its close reports it.
        _ = fields.withList { list, count in
            withBody
                ? nghttp2_submit_response(session, id, list, count, &provider)
                : nghttp2_submit_response(session, id, list, count, nil)
        }
    }

    /// The answer is complete on the gateway's side: a body it never asked for is dropped
    /// (and the stream reset once the answer is out), and the answer is framed.
    private func answered(on handler: HTTP2ConnectionHandler) {
        if case .unclaimed = body.consumer, !body.complete {
            body.consumer = .discarding(remaining: nil)
            body.paused = false
            handler.deliverBody(self)
        }
        handler.drive()
    }

    /// New output (or its end) for a stream whose data provider may be waiting: nghttp2
    /// knows whether it said DEFERRED, and resuming one that did not is refused without
    /// effect (`NGHTTP2_ERR_INVALID_ARGUMENT`), so no flag of ours mirrors its state.
    private func wake(_ session: OpaquePointer?) {
        guard !closed, let session else { return }
        nghttp2_session_resume_data(session, id)
    }

    /// The `content-length` of a whole response: none for 204 (RFC 9110 §8.6) or a gRPC
    /// trailers-only answer; for a bodiless one (HEAD, 304) the length it stands for, if
    /// known; else the body's.
    static func announcedLength(_ head: HTTPResponseHead, body: [UInt8], noBody: Bool) -> UInt64? {
        if head.status == 204 || head.trailersOnly { return nil }
        if noBody { return HTTP1ResponseEncoder.contentLength(head) ?? (body.isEmpty ? nil : UInt64(body.count)) }
        return UInt64(body.count)
    }

    /// RFC 9110 §6.4.1: no content after HEAD, 1xx, 204, 304.
    private func hasNoBody(_ status: Int) -> Bool {
        isHEAD || status == 204 || status == 304 || (100..<200).contains(status)
    }
}
