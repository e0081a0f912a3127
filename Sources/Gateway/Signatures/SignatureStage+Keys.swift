import JOSE
import MessageSignatures
import Yams

extension SignatureStage {
    /// Verifies `chosen` with the key its `keyid` names in the policy's source; `done` runs
    /// once, now or (after an issuer's refetch for a key it has just rotated in) later on
    /// this loop.
    /// `client`: the client the request's access token was issued to, for `client_jwks`.
    func verify(
        _ chosen: MessageSignatureFields.Labeled, keyid: String, _ message: SignedMessage, client: String?,
        done: @escaping (Result<SignatureAlgorithm, MessageSignatureError>) -> Void
    ) {
        let rsa = policy.rsaAlgorithm
        let allowed = policy.requirements.algorithms
        switch policy.keys {
        case .none:
            done(.failure(MessageSignatureError(.unknownKey, "no keys are configured")))
        case .jwksFile(_, let set):
            done(Self.attempt(chosen, keyid: keyid, message, set, symmetric: true, rsa: rsa, allowed: allowed))
        case .clientJWKS(_, let registry):
            guard let client, let set = registry[client] else {
                done(.failure(MessageSignatureError(.unknownKey, "the token's client has no registered keys")))
                return
            }
            done(Self.attempt(chosen, keyid: keyid, message, set, symmetric: true, rsa: rsa, allowed: allowed))
        case .issuer(let issuer):
            let keys = tokens.issuerKeys
            keys.verify(
                { () -> Result<SignatureAlgorithm, MessageSignatureError> in
                    guard let set = keys[issuer: issuer] else {
                        return .failure(MessageSignatureError(.unknownKey, "the issuer's keys are not loaded"))
                    }
                    return Self.attempt(
                        chosen, keyid: keyid, message, set, symmetric: false, rsa: rsa, allowed: allowed)
                },
                unknownKey: { outcome in
                    if case .failure(let e) = outcome, e.reason == .unknownKey { return issuer }
                    return nil
                },
                done: done)
        }
    }

    /// One try with the keys at hand: the one key with this `kid` (RFC 7517 §4.5: a kid that
    /// names two keys names none), never a symmetric one from an issuer's published set.
    static func attempt(
        _ chosen: MessageSignatureFields.Labeled, keyid: String, _ message: SignedMessage, _ set: JWKSet,
        symmetric: Bool, rsa: SignatureAlgorithm, allowed: Set<JWSAlgorithm>? = nil
    ) -> Result<SignatureAlgorithm, MessageSignatureError> {
        guard let key = set.key(kid: keyid) else {
            return .failure(
                MessageSignatureError(
                    .unknownKey,
                    set.isShared(kid: keyid) ? "several keys have keyid \(keyid)" : "no key has keyid \(keyid)"))
        }
        if key.kty == "oct" && !symmetric {
            return .failure(MessageSignatureError(.unknownKey, "the key \(keyid) is a shared secret"))
        }
        return Result { try SignatureVerifier.verify(chosen, in: message, with: key, rsa: rsa, allowed: allowed) }
            .mapError {
                $0 as? MessageSignatureError ?? MessageSignatureError(.badSignature, "the signature does not verify")
            }
    }
}

extension ConfigParser {
    /// A route's `verify_signature`: a defined policy, on a route whose requests are admitted.
    static func routeSignature(_ route: inout RouteConfig, _ node: Node, path p: String, _ context: RouteKeyContext) {
        let r = context.r
        guard let name = r.string(node, path: p) else { return }
        guard let policy = context.cfg.signatures[name] else {
            let defined = context.cfg.signatures.keys.sorted().joined(separator: ", ")
            r.problem(
                p, node, "\"\(name)\" is not defined under signatures; defined: \(defined.isEmpty ? "none" : defined)")
            return
        }
        route.options.settings[SignatureStage.Settings.self] = policy
    }
}
