import JOSE
import Logging
import MessageSignatures
import Reactor
import Yams

/// A route's `verify_signature: NAME`: the request must carry an HTTP Message Signature
/// (RFC 9421) that its policy accepts. Once the request is admitted, the signature is
/// checked over the request as the client sent it (before any rewrite): its tag, what it
/// covers, its times, its key (the `keyid` looked up in the policy's keys; the algorithm is
/// the key's), its nonce (claimed in the replay store, across replicas with Redis). When it
/// covers `Content-Digest`, a second part of the stage compares that digest with the body
/// once the body is read whole, before the upstream is called (RFC 9530). A refusal is 401
/// with `Accept-Signature` (§5.1) saying what the route wants.
final class SignatureStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>(
        "verify_signature", type: "name of a `signatures` entry", default: "none"
    ) { route, node, path, context in
        ConfigParser.routeSignature(&route, node, path: path, context)
    }
    /// A route's setting of this stage: what its signatures must cover (`RouteOptions.settings`).
    enum Settings: RouteSettingKey { typealias Value = SignaturePolicy }
    static let position = StagePosition.afterAuthentication
    static let positions: [StagePosition] = [.afterAuthentication, .afterBody]

    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition) -> SignatureStage? {
        guard let policy = plan.route.options.settings[Settings.self] else { return nil }
        return SignatureStage(
            policy: policy, replay: services.authentication.replay, tokens: services.authentication.tokens,
            refusals: services.modules[Signatures.self],
            checksBody: position == .afterBody)
    }

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> SignatureStage? {
        make(plan, services, at: position)
    }

    let policy: SignaturePolicy
    /// The replay memory a nonce is claimed in, and the issuers' keys (the services hold
    /// them and the plans that hold their stages).
    unowned(unsafe) let replay: ReplayStore
    unowned(unsafe) let tokens: AccessTokenValidator
    /// This worker's count of refusals (the module's service, held as the replay store is).
    unowned(unsafe) let refusals: SignatureRefusals
    /// The part after the body is read: the digest.
    let checksBody: Bool
    private let contentDigest = try! ComponentIdentifier("content-digest")

    init(
        policy: SignaturePolicy, replay: ReplayStore, tokens: AccessTokenValidator, refusals: SignatureRefusals,
        checksBody: Bool
    ) {
        self.policy = policy
        self.replay = replay
        self.tokens = tokens
        self.refusals = refusals
        self.checksBody = checksBody
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let admission = request.admitted
        // A preflight carries no credential and no signature to ask for.
        if admission.preflight { return .proceed }
        if checksBody { return checkDigest(request, admission) }
        let chosen: MessageSignatureFields.Labeled
        let message: SignedMessage
        do {
            let head = request.head
            let fields = try MessageSignatureFields(
                input: combined(head, "Signature-Input"), signature: combined(head, "Signature"))
            // Only the fields a signature covers, or the policy asks about, are read into the
            // message: not every field of every request.
            var names: [String] = []
            for c in policy.requirements.coverIfPresent where !c.isDerived && !names.contains(c.name) {
                names.append(c.name)
            }
            for s in fields.signatures {
                for c in s.parameters.components where !c.isDerived && !names.contains(c.name) { names.append(c.name) }
            }
            message = Self.clientMessage(request, request.services, fields: names)
            chosen = try SignatureVerifier.select(
                fields, for: policy.requirements, in: message, now: request.services.wallClock.seconds)
        } catch let e as MessageSignatureError {
            return .answer(refusal(e, request))
        } catch {
            return .answer(refusal(MessageSignatureError(.malformed, "the signature fields cannot be read"), request))
        }
        if policy.digestRequiredWithContent, request.hasContent, !chosen.parameters.covers(contentDigest) {
            return .answer(
                refusal(
                    MessageSignatureError(
                        .notCovered, "the request has content: the signature does not cover content-digest"),
                    request))
        }
        guard let keyid = chosen.parameters.keyid else {
            return .answer(refusal(MessageSignatureError(.unknownKey, "the signature names no keyid"), request))
        }
        // RFC 9068 §2.2 `client_id`; an ID-token-shaped access token names its client in `azp`.
        let claims = admission.token?.claims
        let client = claims?["client_id"]?.string ?? claims?["azp"]?.string
        var waiting = true
        var immediate: StageOutcome?
        verify(chosen, keyid: keyid, message, client: client) { [self] outcome in
            let next = verified(outcome, chosen, request, admission)
            finish(next, waiting: waiting, immediate: &immediate, request)
        }
        waiting = false
        return immediate ?? .suspend
    }

    /// What the verification of `chosen` comes to: on with the request, or its refusal. A
    /// nonce is claimed last, so that a refused signature burns none.
    private func verified(
        _ outcome: Result<SignatureAlgorithm, MessageSignatureError>, _ chosen: MessageSignatureFields.Labeled,
        _ request: RoutedRequest, _ admission: Admission
    ) -> StageOutcome {
        if case .failure(let e) = outcome { return .answer(refusal(e, request)) }
        let params = chosen.parameters
        var digest: ContentDigest?
        if params.covers(contentDigest) {
            let lines = request.head.fields.values("Content-Digest")
            guard !lines.isEmpty else {
                return .answer(refusal(MessageSignatureError(.componentMissing, "no Content-Digest"), request))
            }
            do { digest = try ContentDigest(lines: lines) } catch let e as MessageSignatureError {
                return .answer(refusal(e, request))
            } catch {}
            if request.isDecision, !Self.isKnownEmpty(request.head) {
                // An ingress asks about the request without its body: the digest could not be
                // compared, and a signature is not taken on trust for the part it cannot see.
                // Only a described `Content-Length: 0` says there is none (Envoy's ext_authz
                // sends no framing fields at all).
                return .answer(
                    refusal(
                        MessageSignatureError(.digestMismatch, "the content digest cannot be checked here"), request))
            }
        }
        request.context.state[VerifiedRequestSignature.Key.self] = VerifiedRequestSignature(
            label: chosen.label, contentDigest: digest)
        if let h = policy.keyidHeader, let keyid = params.keyid { admission.identity.append((h, keyid)) }
        if let h = policy.tagHeader, let tag = params.tag { admission.identity.append((h, tag)) }
        guard let nonce = params.nonce, let keyid = params.keyid else { return .proceed }
        return claim(nonce, keyid: keyid, params, request)
    }

    /// §7.2.2: a nonce is remembered while its signature would still be accepted; one seen
    /// again is a replay.
    private func claim(_ nonce: String, keyid: String, _ params: SignatureParameters, _ request: RoutedRequest)
        -> StageOutcome
    {
        let requirements = policy.requirements
        let now = request.services.wallClock.seconds
        let until = (params.created ?? now) + (requirements.maxAge ?? 3600) + requirements.leeway + 1
        var waiting = true
        var immediate: StageOutcome?
        replay.claim(
            ReplayID(signatureNonce: nonce, keyid: keyid), kind: .signatureNonce, until: until, now: now
        ) {
            [self] verdict in
            let next: StageOutcome
            switch verdict {
            case .fresh: next = .proceed
            case .replayed:
                next = .answer(
                    refusal(MessageSignatureError(.replayed, "the signature's nonce was used before"), request))
            case .unavailable(let why), .refused(let why):
                next = .answer(
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable", description: "the request cannot be checked now",
                        requestID: request.context.requestID,
                        headers: [("Retry-After", WorkerServices.upstreamRetryAfter)],
                        detail: "signature nonce store: \(why)"))
            }
            finish(next, waiting: waiting, immediate: &immediate, request)
        }
        waiting = false
        return immediate ?? .suspend
    }

    private func finish(
        _ outcome: StageOutcome, waiting: Bool, immediate: inout StageOutcome?, _ request: RoutedRequest
    ) {
        if waiting {
            immediate = outcome
            return
        }
        switch outcome {
        case .proceed: request.resume()
        case .answer(let response, let close): request.answer(response, close: close)
        case .suspend: break
        }
    }

    /// The request as its client signed it: the method, the target and the fields it sent,
    /// and the origin it was addressed to (`public_url` where the config sets one).
    /// `fields`: the names (lowercase, each once) of the fields to read; nil: all of them. A
    /// name's lines keep their order; lines of different names need none (a base reads a
    /// field's lines by name, RFC 9421 §2.1).
    static func clientMessage(_ request: RoutedRequest, _ services: WorkerServices, fields names: [String]? = nil)
        -> SignedMessage
    {
        let head = request.head
        let origin = services.origin(request.origin)
        var fields: [SignedMessage.Field] = []
        if let names {
            for name in names {
                for value in head.fields.values(name) { fields.append(SignedMessage.Field(name: name, value: value)) }
            }
        } else {
            for f in head.fields { fields.append(SignedMessage.Field(name: f.name.lowercased(), value: f.value)) }
        }
        return SignedMessage(
            method: head.methodName, scheme: origin?.scheme ?? request.origin.forwardedProto,
            authority: origin?.authority ?? request.origin.forwardedHost ?? head.fields.first("Host") ?? "",
            target: head.target, fields: fields)
    }

    /// A field's lines combined (RFC 9110 §5.3); nil when the request has none.
    private func combined(_ head: HTTPRequestHead, _ name: String) -> String? {
        let (first, count) = head.fields.firstAndCount(name)
        return count > 1 ? head.fields.values(name).joined(separator: ", ") : first
    }

    /// Whether the head says the request has no content: `Content-Length: 0`, no coding.
    static func isKnownEmpty(_ head: HTTPRequestHead) -> Bool {
        head.fields.first("Transfer-Encoding") == nil && head.fields.first("Content-Length") == "0"
    }
}

/// The request signature `verify_signature` verified, in the request's state: its label,
/// which a signed answer's `"signature";req;key=…` names, and the `Content-Digest` it covers,
/// compared with the body once it is read whole.
final class VerifiedRequestSignature {
    enum Key: RequestStateKey { typealias Value = VerifiedRequestSignature }
    let label: String
    let contentDigest: ContentDigest?

    init(label: String, contentDigest: ContentDigest?) {
        self.label = label
        self.contentDigest = contentDigest
    }
}
