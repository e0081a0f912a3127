import JOSE
import MessageSignatures
import Reactor

/// The signing of one answer, as a response stage: what it covers, and the body held until it
/// is whole; then the head goes on with its length, `Content-Digest` and the signature, and
/// the body after it. An answer past `maxBytes` is not sent unsigned: it is a 502 while
/// nothing has been sent. Its trailers are not signed: they are not passed on either.
final class ResponseSigner: ResponseStage {
    let signing: MessageSigningConfig
    let request: SignedMessage
    let requestLabel: String?
    let held = ByteQueue()
    /// The most of an answer held to be signed (16 MiB): signed answers are API documents.
    static let maxBytes = 16 << 20

    init(signing: MessageSigningConfig, request: SignedMessage, requestLabel: String?) {
        self.signing = signing
        self.request = request
        self.requestLabel = requestLabel
        super.init(position: .signature)
    }

    /// The head being held (nil: nothing held, or an answer that is not signed).
    private var heldHead: HTTPResponseHead?

    override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        if Self.signs(head) { heldHead = head } else { next.head(head, bodyLength: bodyLength) }
    }

    override func body(_ chunk: BodyChunk) {
        guard heldHead != nil else { return next.body(chunk) }
        guard held.count + chunk.count <= Self.maxBytes else {
            heldHead = nil
            exchange.answerInstead(
                ErrorResponse.badGateway(
                    "the upstream's answer is too large to sign", exchange.context.requestID,
                    detail: "sign_response: answer over \(Self.maxBytes) bytes"), upstreamError: "unsignable_answer")
            return
        }
        held.append(chunk)
    }

    override func trailers(_ fields: HTTP1Fields) {
        if heldHead == nil { next.trailers(fields) }
    }

    override func end(detail: String? = nil) {
        guard let head = heldHead else { return next.end(detail: detail) }
        heldHead = nil
        let context = exchange.context
        context.response.dropped += ["Content-Digest", "Signature-Input", "Signature"]
        context.response.added += fields(for: head, now: exchange.services.wallClock.seconds)
        next.head(head, bodyLength: UInt64(held.count))
        if held.count > 0 { next.body(held.chunk) }
        guard !exchange.isDone else { return }
        next.end(detail: detail)
    }

    /// Whether this answer is held and signed: not a stream, and with content to digest.
    static func signs(_ head: HTTPResponseHead) -> Bool {
        head.status >= 200 && head.status != 204 && head.status != 304 && !ClientWriter.isStream(head.fields)
    }

    /// The fields to add to `head` once its body (`held`) is whole.
    func fields(for head: HTTPResponseHead, now: Int64) -> [(String, String)] {
        let digest = DigestContext(.sha256)
        held.scan { digest.update($0) }
        let contentDigest = ContentDigest.field(sha256: digest.finish())
        var fields: [SignedMessage.Field] = []
        for f in head.fields {
            let name = f.name.lowercased()
            if name != "content-digest" && name != "signature" && name != "signature-input" {
                fields.append(SignedMessage.Field(name: name, value: f.value))
            }
        }
        fields.append(SignedMessage.Field(name: "content-digest", value: contentDigest))
        let response = SignedMessage(status: head.status, fields: fields, answering: request)
        var components = signing.components.filter { c in
            c.isDerived || c.has("req") || fields.contains { $0.name == c.name }
        }
        if let label = requestLabel, let c = try? ComponentIdentifier.requestSignature(label) {
            components.append(c)
        }
        let params = SignatureParameters(
            components: components, created: now, keyid: signing.keyid, tag: signing.tag)
        guard
            let signed = try? MessageSigner.sign(
                response, params, label: MessageSigningConfig.label, key: signing.key, algorithm: signing.algorithm)
        else { return [("Content-Digest", contentDigest)] }
        return [("Content-Digest", contentDigest), ("Signature-Input", signed.input), ("Signature", signed.signature)]
    }
}
