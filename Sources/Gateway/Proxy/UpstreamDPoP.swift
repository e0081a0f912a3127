import OAuth
import Reactor

/// DPoP towards an upstream, for the DPoP-bound tokens the gateway itself sends: one got by
/// token exchange, or a login session's (RFC 9449 §7.1). Each upstream request carries
/// `Authorization: DPoP <token>` and a fresh proof from the process's DPoP key; an upstream
/// that asks for server nonces (§9) gets the newest one it gave, and its `use_dpop_nonce`
/// challenge is answered by trying a request without a body once more.

/// The newest nonce each upstream gave this worker (`DPoP-Nonce`, §8.2): one per upstream
/// authority, so bounded by the config. Loop-thread only.
final class UpstreamNonces {
    private var byAuthority: [String: String] = [:]

    func nonce(for authority: String) -> String? { byAuthority[authority] }

    /// Keeps a nonce the upstream sent, if it is one (§8.1: NQCHAR, at most a few hundred
    /// bytes here); anything else is ignored rather than put into a proof.
    func remember(_ value: String, for authority: String) {
        guard Self.isNonce(value) else { return }
        byAuthority[authority] = value
    }

    static func isNonce(_ value: String) -> Bool {
        let bytes = value.utf8
        // NQCHAR: %x21 / %x23-5B / %x5D-7E (RFC 9449 §8.1, after RFC 6749 Appendix A).
        return !bytes.isEmpty && bytes.count <= 512
            && bytes.allSatisfy { $0 == 0x21 || (0x23...0x5b).contains($0) || (0x5d...0x7e).contains($0) }
    }
}

/// What signs the DPoP proof of an upstream request: the token, the process's key, the
/// time the request was let through, and the upstreams' nonces.
struct UpstreamProof {
    let token: String
    let signer: DPoPProofSigner
    /// The proof's `iat`: when the request was let through to the upstream.
    let now: Int64
    let nonces: UpstreamNonces

    /// RFC 9449 §4.2: htm and htu (`scheme://host` and the target without query, as the
    /// upstream sees the request), ath of the token, and the newest nonce kept under
    /// `nonceKey` (the upstream's authority; `host` when nil).
    func proof(method: String, scheme: String, host: String, nonceKey: String? = nil, target: String) -> String? {
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return try? signer.proof(
            method: method, url: "\(scheme)://\(host)\(path)", accessToken: token,
            nonce: nonces.nonce(for: nonceKey ?? host), now: now)
    }
}

/// One request's DPoP towards its upstream, as a response stage nearest the upstream: learns
/// the nonces the answers carry, and turns one `use_dpop_nonce` challenge into a second try
/// when the request can be sent again; that challenge then never reaches the client.
final class UpstreamDPoPExchange: ResponseStage {
    let nonces: UpstreamNonces
    let authority: String
    /// The pool the request went to, for the second try (held: a reload may drop it from the
    /// worker meanwhile).
    var pool: UpstreamPool?
    /// Builds the request again (with a proof that carries the new nonce); nil once used, and
    /// for a request that cannot be sent twice.
    private(set) var retry: (() -> UpstreamCall.Request)?
    /// The answer being passed over: a nonce challenge, whose body is read and dropped
    /// before the request goes again.
    private var challenged: (() -> UpstreamCall.Request)?

    init(nonces: UpstreamNonces, authority: String, retry: (() -> UpstreamCall.Request)?) {
        self.nonces = nonces
        self.authority = authority
        self.retry = retry
        super.init(position: .upstreamRetry)
    }

    override func willSend(_ request: inout UpstreamCall.Request, to pool: UpstreamPool) {
        self.pool = pool
    }

    override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        if let retry = takesRetry(head) {
            challenged = retry
        } else {
            next.head(head, bodyLength: bodyLength)
        }
    }

    override func body(_ chunk: BodyChunk) {
        if challenged == nil { next.body(chunk) }
    }

    override func trailers(_ fields: HTTP1Fields) {
        if challenged == nil { next.trailers(fields) }
    }

    override func end(detail: String? = nil) {
        guard let retry = challenged else { return next.end(detail: detail) }
        challenged = nil
        guard let pool else {
            // Never so today (`willSend` names the pool first); the client has heard nothing.
            return exchange.answerInstead(
                ErrorResponse.badGateway(
                    "the upstream could not be reached or answered badly", exchange.context.requestID,
                    detail: "dpop nonce retry without a pool"), upstreamError: nil)
        }
        exchange.sendAgain(retry(), on: pool)
    }

    /// §9: only a request the gateway can send again unchanged is retried: GET or HEAD (safe,
    /// RFC 9110 §9.2.1) without a body.
    static func mayRetry(_ head: HTTPRequestHead, body: RequestBody) -> Bool {
        guard head.method == .GET || head.method == .HEAD else { return false }
        if case .none = body.framing { return true }
        if case .length(0) = body.framing { return true }
        return false
    }

    /// Reads the upstream's answer head: keeps its `DPoP-Nonce`, and says whether it is a
    /// nonce challenge (401, a DPoP challenge with `error="use_dpop_nonce"`, and a nonce)
    /// that this request answers by trying once more — its answer then never reaches the client.
    func takesRetry(_ head: HTTPResponseHead) -> (() -> UpstreamCall.Request)? {
        guard let nonce = head.fields.first("DPoP-Nonce") else { return nil }
        nonces.remember(nonce, for: authority)
        guard head.status == 401, let retry, UpstreamNonces.isNonce(nonce) else { return nil }
        // A DPoP challenge with that error, alone or beside a Bearer one in the same field.
        let asked = head.fields.values("WWW-Authenticate").contains {
            let v = $0.lowercased()
            // A challenge begins with its scheme (RFC 9110 §11.6.1): at the start, or after a comma.
            let schemes = v.split(separator: ",").map { $0.drop(while: { $0 == " " || $0 == "\t" }) }
            return schemes.contains { $0 == "dpop" || $0.hasPrefix("dpop ") } && v.contains("use_dpop_nonce")
        }
        // At the pool's cap the connection this answer frees may go to a request that waits;
        // a second try would pass it. The client hears the challenge instead.
        guard asked, pool?.hasRoom != false else { return nil }
        self.retry = nil
        return retry
    }
}
