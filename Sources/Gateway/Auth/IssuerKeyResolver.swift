import JOSE

/// The issuers' signing keys as this worker holds them, and the one way verifiers use them:
/// verify; on a key the set does not have (an AS that has just rotated one in), ask the main
/// loop for one rate-limited refetch and verify once more — never a second refetch, whatever
/// the token says (panva/jose's remote key set behaves the same). Access tokens, ID tokens at
/// the callback and back-channel logout tokens all go through `verify`.
final class IssuerKeyResolver {
    /// Issuer name → its keys, copied from the main loop's `IssuerKeyService`.
    private(set) var keys: [String: JWKSet] = [:]
    /// Asks the main loop to refetch an issuer's keys; the completion runs on this worker's
    /// loop with the new set (nil: nothing changed, or the refetch was rate-limited).
    var requestRefetch: ((_ issuer: String, _ done: @escaping (JWKSet?) -> Void) -> Void)?
    /// Runs after each new key set (what older keys verified must be verified again).
    var onUpdate: ((_ issuer: String) -> Void)?

    subscript(issuer issuer: String) -> JWKSet? { keys[issuer] }

    func update(_ issuer: String, _ set: JWKSet) {
        keys[issuer] = set
        onUpdate?(issuer)
    }

    /// Runs `attempt`. If `unknownKey` finds that the outcome failed on a missing key, and names
    /// the issuer, that issuer's keys are refetched once and `attempt` runs again; `done` gets
    /// the last outcome, now or later on this loop.
    func verify<Outcome>(
        _ attempt: @escaping () -> Outcome, unknownKey: @escaping (Outcome) -> String?,
        done: @escaping (Outcome) -> Void
    ) {
        let first = attempt()
        guard let issuer = unknownKey(first), let requestRefetch else {
            done(first)
            return
        }
        requestRefetch(issuer) { [weak self] set in
            guard let self else { return }
            if let set { self.update(issuer, set) }
            done(attempt())
        }
    }

    /// `unknownKey` for verifiers that throw `JOSEError`: a missing key of `issuer`.
    static func missingKey<Value>(of issuer: String) -> (Result<Value, Error>) -> String? {
        { outcome in
            if case .failure(let e as JOSEError) = outcome, e.code == .keyNotFound { return issuer }
            return nil
        }
    }
}
