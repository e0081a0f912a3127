import Foundation
import JOSE
import OAuth
import Reactor

/// The authentication stage of `bearer`, `dpop` and `token` routes for one worker: reads
/// the credential (RFC 6750 §2, RFC 9449 §7.1), lets each scheme apply its own rules, and
/// answers refusals with one challenge per scheme the route accepts.
///   - Bearer: the token is validated and must not be DPoP-bound (RFC 9449 §7.2).
///   - DPoP: exactly one proof, checked per §4.3 (with server nonces when the route asks),
///     the token validated and bound to the proof's key (§6.1 `cnf.jkt`), then the proof's
///     `jti` claimed in the replay store (§11.1) — last, so a refused request burns nothing.
final class TokenAuthenticator {
    let validator: AccessTokenValidator
    private let replay: ReplayStore
    /// "Now" for proof `iat` windows, nonces and the replay window (the validator's clock).
    private var wallClock: any WallClock { validator.wallClock }
    private var proofVerifiers: [Int: DPoPProofVerifier] = [:]
    private var nonces: DPoPNonces?
    private var failOpen = false
    /// Proofs accepted without a replay check because the store could not answer (fail_open).
    private(set) var uncheckedProofs = 0
    private var publicURLs: [PublicURL] = []
    /// Each issuer's `leeway`, by name, for the step-up checks of `auth_time`.
    private var leeways: [String: Int64] = [:]
    /// Proof keys this worker has imported already (clients reuse one key for every proof).
    private let proofKeys = DPoPKeyCache(capacity: 4096)

    init(validator: AccessTokenValidator, replay: ReplayStore) {
        self.validator = validator
        self.replay = replay
    }

    func apply(_ config: GatewayConfig) {
        validator.apply(config)
        publicURLs = config.publicURLs
        leeways = config.issuers.mapValues { Int64($0.leeway) }
        failOpen = config.dpop.failOpenOnStoreFailure
        let keys = (config.dpop.nonceKeys.isEmpty ? [ProcessSecrets.dpopNonceKey] : config.dpop.nonceKeys).compactMap {
            MACKey(secret: $0)
        }
        let nonces = DPoPNonces(keys: keys, lifetime: Int64(config.dpop.nonceLifetime))
        self.nonces = nonces
        proofVerifiers = [:]
        for route in config.routes {
            guard let d = route.options.auth.tokenRoute?.dpop else { continue }
            var v = DPoPProofVerifier()
            v.algorithms = d.algorithms
            v.window = Int64(d.iatWindow)
            v.leeway = Int64(d.leeway)
            v.nonces = d.nonceRequired ? nonces : nil
            proofVerifiers[route.index] = v
        }
    }

    /// How the client addressed the request: what a DPoP proof's `htu` must name (see
    /// `RequestOrigin` for which of these are believed).
    struct Target {
        var scheme: String
        /// The effective Host: a trusted proxy's X-Forwarded-Host, or the Host header.
        var host: String
        var fromTrustedProxy: Bool
        var path: String
        /// The client certificate the connection verified (mutual TLS), which a token's
        /// `cnf.x5t#S256` must name (RFC 8705 §3). nil in decision mode: the connection
        /// there is the ingress's, not the client's.
        var certificate: ClientCertificate? = nil
    }

    /// Everything a token route is checked with, from the config applied last: made with
    /// each route plan, so a request keeps its route's rules even if a reload lands while
    /// its body is still arriving. nil for a route that takes no tokens.
    func plan(for route: RouteConfig) -> TokenRoutePlan? {
        guard let tokens = route.options.auth.tokenRoute else { return nil }
        return TokenRoutePlan(
            refusals: AuthRefusals(
                tokens: tokens, nonces: nonces, wallClock: wallClock,
                leeway: tokens.issuers.compactMap { leeways[$0] }.max() ?? 0),
            access: validator.rules(forRoute: route.index), proof: proofVerifiers[route.index])
    }

    /// Decides on the head alone; `formTokens`: the `access_token`s of a form body the
    /// caller read first (only on routes with `token_in_body`); `tokens`: the route's token
    /// settings; `plan`: the route plan's rules, made from those same settings.
    func authenticate(
        _ head: HTTPRequestHead, tokens: TokenRouteConfig, plan: TokenRoutePlan, target: Target, query: String?,
        formTokens: [String] = [], done: @escaping (AuthDecision) -> Void
    ) {
        let answer = plan.refusals
        var queryTokens: [String] = []
        if tokens.schemes.acceptsBearer {
            queryTokens = query.map(Self.accessTokens(inQuery:)) ?? []
        }
        var authorization = AuthorizationFields()
        head.fields.forEachValue(named: "Authorization") { authorization.add($0) }
        let credential = BearerTokenExtractor.extract(
            authorization: authorization, formTokens: formTokens,
            queryTokens: queryTokens,
            sources: TokenSources(formBody: tokens.tokenInBody, query: tokens.tokenInQuery))
        switch credential {
        case .none:
            // RFC 6750 §3.1: no credentials → challenges without an error code.
            done(.deny(answer.bare(detail: "no credentials")))
        case .invalid(let reason):
            done(.deny(answer.refuse(400, .invalid_request, reason, scheme: nil)))
        case .bearer(let token) where token.hasPrefix(APIKey.prefix):
            // An API key sent as a token (a client's slip): refused here, so that no issuer
            // (introspection) and no cache ever sees it.
            done(
                .deny(
                    answer.refuse(
                        401, .invalid_token, "an API key is not an access token", scheme: "Bearer",
                        detail: "api key in the Bearer scheme")))
        case .bearer(let token):
            guard tokens.schemes.acceptsBearer else {
                done(
                    .deny(
                        answer.refuse(
                            401, .invalid_token, "this route requires a DPoP-bound token with a DPoP proof",
                            scheme: "DPoP",
                            detail: "Bearer scheme on a dpop route")))
                return
            }
            let alone = formTokens.isEmpty && queryTokens.isEmpty
            let certificate = target.certificate
            func decide(_ verdict: AccessTokenValidator.Verdict) -> AuthDecision {
                var decision = Self.decideBearer(verdict, answer: answer, certificate: certificate)
                if case .allow(var caller) = decision {
                    caller.presented = token
                    if alone { caller.fromAuthorization = token }
                    decision = .allow(caller)
                }
                return decision
            }
            // Decided on this turn (no closure kept) unless the token needs another server.
            if let verdict = validator.validateNow(token, rules: plan.access) {
                done(decide(verdict))
            } else {
                validator.validateLater(token, rules: plan.access) { done(decide($0)) }
            }
        case .dpop(let token):
            guard tokens.schemes.acceptsDPoP else {
                done(
                    .deny(
                        answer.refuse(
                            401, .invalid_token, "this route accepts Bearer tokens", scheme: "Bearer",
                            detail: "DPoP scheme on a bearer route")))
                return
            }
            authenticateDPoP(head, token: token, plan: plan, target: target, done: done)
        }
    }

    private static func decideBearer(
        _ verdict: AccessTokenValidator.Verdict, answer: AuthRefusals, certificate: ClientCertificate?
    ) -> AuthDecision {
        switch verdict {
        case .unavailable(let reason, let detail): return .unavailable(reason, detail: detail)
        case .invalid(let description, let detail):
            return .deny(answer.refuse(401, .invalid_token, description, scheme: "Bearer", detail: detail))
        case .valid(let token):
            if let denial = answer.checkResource(token, scheme: "Bearer") { return .deny(denial) }
            // RFC 9449 §7.2: a DPoP-bound token presented as a Bearer token is invalid.
            if token.jkt != nil {
                return .deny(
                    answer.refuse(
                        401, .invalid_token, "the token is DPoP-bound; present it with a DPoP proof", scheme: "Bearer",
                        detail: "DPoP-bound token sent as Bearer"))
            }
            // RFC 8705 §3: a certificate-bound token is good only over mutual TLS with that
            // certificate; a token bound to a key of any other kind, never.
            if token.x5tS256 != nil || token.hasMalformedX5t {
                if let denial = checkCertificateBinding(token, certificate, answer: answer, scheme: "Bearer") {
                    return .deny(denial)
                }
            } else if token.isSenderConstrained {
                return .deny(
                    answer.refuse(
                        401, .invalid_token, "the token is bound to a key of a kind this gateway cannot check",
                        scheme: "Bearer", detail: "cnf of an unknown kind"))
            }
            // FAPI 2.0 Security Profile §5.3.4 item 5 (profile: fapi2 on the issuer): sender-
            // constrained tokens only.
            if token.x5tS256 == nil, answer.tokens.boundOnlyIssuers.contains(token.issuer) {
                return .deny(
                    answer.refuse(
                        401, .invalid_token,
                        "this issuer's tokens must be sender-constrained (DPoP or a client certificate)",
                        scheme: "Bearer", detail: "unbound token of a profile: fapi2 issuer"))
            }
            if let denial = answer.authorize(token, scheme: "Bearer") { return .deny(denial) }
            return .allow(AuthenticatedCaller(token: token))
        }
    }

    /// RFC 8705 §3: the token's `cnf.x5t#S256` names the certificate this connection's client
    /// presented (compared in constant time), or the answer is 401 `invalid_token`.
    private static func checkCertificateBinding(
        _ token: VerifiedAccessToken, _ certificate: ClientCertificate?, answer: AuthRefusals, scheme: String
    ) -> AuthDenial? {
        if token.hasMalformedX5t {
            return answer.refuse(
                401, .invalid_token, "the token's certificate binding (cnf.x5t#S256) is malformed", scheme: scheme,
                detail: "x5t#S256 is not a base64url SHA-256")
        }
        guard let bound = token.x5tS256 else { return nil }
        guard let certificate else {
            return answer.refuse(
                401, .invalid_token, "the token is bound to a client certificate; present that certificate over TLS",
                scheme: scheme, detail: "certificate-bound token without a client certificate")
        }
        guard ConstantTime.equals(bound, certificate.sha256) else {
            return answer.refuse(
                401, .invalid_token, "the token is bound to another client certificate", scheme: scheme,
                detail: "x5t#S256 does not match the client certificate")
        }
        return nil
    }

    private func authenticateDPoP(
        _ head: HTTPRequestHead, token: String, plan: TokenRoutePlan, target: Target,
        done: @escaping (AuthDecision) -> Void
    ) {
        let answer = plan.refusals
        // §4.3 check 1: exactly one DPoP header.
        let proofs = head.fields.firstAndCount("DPoP")
        guard proofs.count == 1, let proofText = proofs.first, let verifier = plan.proof else {
            let reason = proofs.count == 0 ? "a DPoP proof is required" : "more than one DPoP header"
            done(.deny(answer.refuse(401, .invalid_dpop_proof, reason, scheme: "DPoP")))
            return
        }
        let now = wallClock.seconds
        guard
            let origin = RequestOrigin.select(
                publicURLs: publicURLs, scheme: target.scheme, host: target.host,
                fromTrustedProxy: target.fromTrustedProxy)
        else {
            done(
                .deny(
                    answer.refuse(
                        401, .invalid_dpop_proof, "the request's origin is not one this gateway answers for",
                        scheme: "DPoP",
                        detail: "no trusted origin for host \(target.host)")))
            return
        }
        let proof: DPoPProof
        do {
            proof = try verifier.verify(
                proofText,
                request: .init(
                    method: head.methodName, uri: "\(origin.scheme)://\(origin.authority)\(target.path)",
                    accessToken: token, now: now, normalizePath: Self.normalizePath),
                keyCache: proofKeys)
        } catch {
            done(.deny(answer.refuse(401, error.wireCode, error.reason, scheme: "DPoP", detail: error.description)))
            return
        }
        validator.validate(token, rules: plan.access) { [replay, nonces, unowned self] verdict in
            let bound: VerifiedAccessToken
            switch verdict {
            case .unavailable(let reason, let detail):
                done(.unavailable(reason, detail: detail))
                return
            case .invalid(let description, let detail):
                done(.deny(answer.refuse(401, .invalid_token, description, scheme: "DPoP", detail: detail)))
                return
            case .valid(let t): bound = t
            }
            if let denial = answer.checkResource(bound, scheme: "DPoP") {
                done(.deny(denial))
                return
            }
            // §6.1 / §7.1: the token must be bound to the key that signed the proof.
            guard let jkt = bound.jkt else {
                done(.deny(answer.refuse(401, .invalid_token, "the token is not DPoP-bound", scheme: "DPoP")))
                return
            }
            guard ConstantTime.equals(Array(jkt.utf8), Array(proof.jkt.utf8)) else {
                done(
                    .deny(
                        answer.refuse(
                            401, .invalid_token, "the token is bound to another key than the proof's", scheme: "DPoP")))
                return
            }
            // Bound to a certificate as well: both bindings hold.
            if let denial = Self.checkCertificateBinding(bound, target.certificate, answer: answer, scheme: "DPoP") {
                done(.deny(denial))
                return
            }
            if let denial = answer.authorize(bound, scheme: "DPoP") {
                done(.deny(denial))
                return
            }
            // §11.1: the proof's id is remembered as long as the proof would be accepted.
            replay.claim(ReplayID(jkt: proof.jkt, jti: proof.jti), until: proof.acceptableUntil + 1, now: now) {
                result in
                switch result {
                case .fresh:
                    var caller = AuthenticatedCaller(token: bound, jkt: proof.jkt, presented: token)
                    if proof.nonceIsStale, let nonces {
                        caller.responseHeaders.append(("DPoP-Nonce", nonces.issue(now: now)))
                    }
                    done(.allow(caller))
                case .replayed:
                    done(
                        .deny(
                            answer.refuse(
                                401, .invalid_dpop_proof, "the DPoP proof has been used before", scheme: "DPoP",
                                detail: "jti replayed")))
                case .unavailable where self.failOpen:
                    // Configured availability over replay defence: let it through, and say so.
                    self.uncheckedProofs += 1
                    var caller = AuthenticatedCaller(token: bound, jkt: proof.jkt, presented: token)
                    if proof.nonceIsStale, let nonces {
                        caller.responseHeaders.append(("DPoP-Nonce", nonces.issue(now: now)))
                    }
                    done(.allow(caller))
                case .unavailable(let why):
                    done(.unavailable(.replayStoreUnavailable, detail: "DPoP replay store: \(why)"))
                case .refused(let why):
                    done(.unavailable(.replayStoreRefused, detail: "DPoP replay store: \(why)"))
                }
            }
        }
    }

    /// The router's normalization, for the path of a proof's `htu`.
    static let normalizePath: @Sendable (String) -> String? = { path in
        if case .success(let n) = PathNormalizer.normalize(target: path), n.query == nil { return n.path }
        return nil
    }

    /// RFC 6750 §2.2: a token may ride only in a form-encoded body of a request that has
    /// one (`hasContent`: `RoutedRequest.hasContent`, which sees HTTP/2 DATA frames), and not
    /// with GET.
    static func mayCarryFormToken(_ head: HTTPRequestHead, hasContent: Bool) -> Bool {
        guard head.method != .GET, hasContent,
            let type = head.fields.first("Content-Type")?.lowercased()
        else { return false }
        return type.hasPrefix("application/x-www-form-urlencoded")
    }

    /// The `access_token`s of a form body, and the body to forward: without them, unless
    /// the route forwards the token.
    static func formTokens(_ body: [UInt8], keepToken: Bool) -> (tokens: [String], kept: [UInt8]) {
        let text = String(decoding: body, as: UTF8.self)
        let found = accessTokens(inQuery: text)
        guard !found.isEmpty, !keepToken else { return (found, body) }
        let kept = text.split(separator: "&").filter { !$0.hasPrefix("access_token=") }.joined(separator: "&")
        return (found, Array(kept.utf8))
    }

    /// `access_token` values of a raw query string (RFC 6750 §2.3), percent-decoded.
    static func accessTokens(inQuery query: String) -> [String] {
        query.split(separator: "&").compactMap { pair in
            guard pair.hasPrefix("access_token=") else { return nil }
            return String(pair.dropFirst(13)).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
    }
}

/// A token route's rules for one config, kept by its route plan (see `TokenAuthenticator.plan`).
final class TokenRoutePlan {
    let refusals: AuthRefusals
    let access: AccessTokenValidator.RouteRules?
    /// The route's DPoP proof rules; nil on a Bearer-only route.
    let proof: DPoPProofVerifier?

    init(refusals: AuthRefusals, access: AccessTokenValidator.RouteRules?, proof: DPoPProofVerifier?) {
        self.refusals = refusals
        self.access = access
        self.proof = proof
    }
}

/// Random per-process secrets, made once on first use and shared by every worker.
enum ProcessSecrets {
    /// Signs DPoP nonces when `dpop.nonce_keys` is not configured: one process accepts its own
    /// nonces; replicas need a configured shared key.
    static let dpopNonceKey: [UInt8] = SecureRandom.bytes(32)
}
