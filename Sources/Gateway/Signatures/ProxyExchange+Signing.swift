import Reactor

/// A signed answer on its way through the proxy (`sign_response`, ResponseSigner): the body is
/// held whole, then the head goes with its length, `Content-Digest` and the signature, and
/// the body after it. An answer past `ResponseSigner.maxBytes` is not sent unsigned: it is a
/// 502 while nothing has been sent.
extension ProxyExchange {
    func holdSigned(_ chunk: BodyChunk) {
        guard let signer = context.responseSigner else { return }
        guard signer.held.count + chunk.count <= ResponseSigner.maxBytes else {
            signedHead = nil
            context.responseSigner = nil
            refuseHeldAnswer(
                metric: "unsignable_answer", description: "the upstream's answer is too large to sign",
                detail: "sign_response: answer over \(ResponseSigner.maxBytes) bytes")
            return
        }
        signer.held.append(chunk)
    }

    func sendSigned(_ head: HTTPResponseHead) {
        guard let signer = context.responseSigner else { return }
        context.responseSigner = nil
        for name in ["Content-Digest", "Signature-Input", "Signature"] { context.droppedResponseHeaders.append(name) }
        context.responseHeaders += signer.fields(for: head, now: services.wallClock.seconds)
        spoolAllowed = mayBuffer(head)
        sendHead(head, bodyLength: UInt64(signer.held.count))
        if signer.held.count > 0 { send(signer.held.chunk) }
    }
}
