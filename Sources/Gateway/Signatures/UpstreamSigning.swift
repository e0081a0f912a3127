import JOSE
import MessageSignatures
import Reactor

/// An upstream request signed by the gateway (`upstreams.NAME.sign`), after the last header
/// rewrite, over what is sent: the method, the upstream's target and `Host`, the fields as
/// they go (identity headers included), and a `Content-Digest` of the body (RFC 9530). The
/// upstream can then check that the request came through the gateway untouched.
enum UpstreamSigning {
    /// Adds `Content-Digest` (when covered and not sent by the client), `Signature-Input` and
    /// `Signature` to `request`. The digest is the gateway's own over the bytes it sends when
    /// it holds them whole; a client's digest is covered only when it matches them. A body
    /// that streams has no digest the gateway can vouch for: `content-digest` is then left
    /// out, and an upstream that requires it refuses the request, as it should.
    /// `identity`: the identity headers the route set on this request, covered too when the
    /// signing uses the default components (`coversIdentityHeaders`).
    static func sign(
        _ request: inout UpstreamCall.Request, _ signing: MessageSigningConfig, method: String, scheme: String,
        authority: String, identity: [(String, String)] = [], now: Int64
    ) {
        var fields: [SignedMessage.Field] = []
        if let passed = request.forwarded {
            for (i, f) in passed.fields.enumerated() where !passed.isDropped(i) {
                fields.append(SignedMessage.Field(name: f.name.lowercased(), value: f.value))
            }
        }
        for f in request.fields { fields.append(SignedMessage.Field(name: f.name.lowercased(), value: f.value)) }
        var covered: [ComponentIdentifier] = []
        for c in signing.components {
            if c.name == "content-digest" {
                let sent = fields.filter { $0.name == "content-digest" }.map(\.value)
                switch digest(request.body, sent: sent.isEmpty ? nil : sent) {
                case .none: continue
                case .clients: break
                case .added(let field):
                    request.fields.append("Content-Digest", field)
                    fields.append(SignedMessage.Field(name: "content-digest", value: field))
                }
                covered.append(c)
            } else if c.isDerived || fields.contains(where: { $0.name == c.name }) {
                covered.append(c)
            }
        }
        if signing.coversIdentityHeaders {
            for (name, _) in identity {
                guard let c = try? ComponentIdentifier(config: name.lowercased()), !covered.contains(c) else {
                    continue
                }
                covered.append(c)
            }
        }
        let message = SignedMessage(
            method: method, scheme: scheme, authority: authority, target: request.target, fields: fields)
        let params = SignatureParameters(components: covered, created: now, keyid: signing.keyid, tag: signing.tag)
        // The key was checked at load to sign this algorithm; the base is built from fields
        // that are all present.
        guard
            let signed = try? MessageSigner.sign(
                message, params, label: MessageSigningConfig.label, key: signing.key, algorithm: signing.algorithm)
        else { return }
        request.fields.append("Signature-Input", signed.input)
        request.fields.append("Signature", signed.signature)
    }

    enum DigestCover {
        /// Not covered: the body streams, or the client's field does not match it.
        case none
        /// The client's own field, which matches the body.
        case clients
        /// The gateway's field, to add.
        case added(String)
    }

    /// `sent`: every `Content-Digest` line the client's request carries. Each digest they
    /// name, on every line, must match the body: the signature vouches for all of them.
    static func digest(_ body: RequestBody?, sent: [String]?) -> DigestCover {
        guard let sent else {
            let mine = DigestContext(.sha256)
            guard BodyBytes.scan(body, into: [mine]) == .read else { return .none }
            return .added(ContentDigest.field(sha256: mine.finish()))
        }
        guard let theirs = try? ContentDigest(lines: sent) else { return .none }
        let contexts = theirs.contexts()
        guard BodyBytes.scan(body, into: contexts) == .read, theirs.matches(contexts) else { return .none }
        return .clients
    }
}

/// A request body the gateway holds whole, fed to digests in place (memory, then the spool
/// file).
enum BodyBytes {
    enum Scan: Equatable {
        case read
        /// The body streams as it comes: the gateway never holds it whole.
        case streams
        /// The spool file could not be read back.
        case unreadable
    }

    static func scan(_ body: RequestBody?, into contexts: [DigestContext]) -> Scan {
        guard let body else { return .read }
        if let whole = body as? SpooledRequestBody {
            return whole.scan { bytes in for c in contexts { c.update(bytes) } } ? .read : .unreadable
        }
        if let held = body as? BufferedRequestBody {
            held.scan { bytes in for c in contexts { c.update(bytes) } }
            return .read
        }
        switch body.framing {
        case .none, .length(0): return .read
        default: return .streams
        }
    }
}
