import OAuth

/// Why authentication refused a request: the label of `tokengate_auth_failures_total` and the
/// access log's `rejection`. The codes are the RFC 6750 §3.1 / RFC 9449 §7.1 error codes the
/// client was sent, `no_credentials` for the bare challenge (§3.1: a request without
/// credentials gets no error code) and `login_required` on session routes. Stable: dashboards
/// count by them.
enum AuthFailure: String, CaseIterable, Sendable {
    case noCredentials = "no_credentials"
    case invalidRequest = "invalid_request"
    case invalidToken = "invalid_token"
    case insufficientScope = "insufficient_scope"
    case invalidDPoPProof = "invalid_dpop_proof"
    case useDPoPNonce = "use_dpop_nonce"
    case insufficientUserAuthentication = "insufficient_user_authentication"
    case loginRequired = "login_required"

    var code: String { rawValue }

    init(_ error: OAuthErrorCode) {
        switch error {
        case .invalid_request: self = .invalidRequest
        case .invalid_token: self = .invalidToken
        case .insufficient_scope: self = .insufficientScope
        case .invalid_dpop_proof: self = .invalidDPoPProof
        case .use_dpop_nonce: self = .useDPoPNonce
        case .insufficient_user_authentication: self = .insufficientUserAuthentication
        }
    }

    /// The error code the denial's challenge carries; none: the bare challenge.
    init(_ denial: AuthDenial) {
        self = denial.primary?.error.map(AuthFailure.init) ?? .noCredentials
    }
}

/// Why the gateway could not decide about a request (503 `temporarily_unavailable`): not the
/// caller's fault, and not an auth failure. The access log's `reason`.
enum UnavailableReason: String, CaseIterable, Sendable {
    /// An issuer's keys were never loaded (JWKS not fetched yet, or failing).
    case keysNotLoaded = "keys_not_loaded"
    /// The introspection endpoint could not be asked, or did not answer about the token
    /// (RFC 7662 §2.3: an error is not "inactive").
    case introspectionUnavailable = "introspection_unavailable"
    /// The DPoP replay store (RFC 9449 §11.1) could not be reached.
    case replayStoreUnavailable = "replay_store_unavailable"
    /// The DPoP replay store answered but would not record the proof.
    case replayStoreRefused = "replay_store_refused"
    /// The session store could not be read.
    case sessionStoreUnavailable = "session_store_unavailable"
    /// A refreshed session could not be stored.
    case sessionNotSaved = "session_not_saved"
    /// The session's access token expired and could not be refreshed; it is not sent upstream.
    case tokenNotRefreshed = "token_not_refreshed"
    /// A `token_exchange` route got no token for its upstream: the AS could not be asked,
    /// or its answer was no usable token for the target (RFC 8693 §2.2.1).
    case tokenNotExchanged = "token_not_exchanged"
    /// An upstream's `credentials` token could not be had: its AS could not be asked, or
    /// gave no usable token.
    case upstreamCredentialUnavailable = "upstream_credential_unavailable"
    /// A Shared Signals event could not be written to the store's log: it is not applied,
    /// and the transmitter delivers it again.
    case revocationNotStored = "revocation_not_stored"

    var code: String { rawValue }
}

/// How a request was refused, for the access log (`RequestContext.rejection`).
enum Rejection: Equatable, Sendable {
    case refused(AuthFailure)
    case unavailable(UnavailableReason)

    /// The access log's `rejection` value: the auth failure's code, or `unavailable`.
    var code: String {
        switch self {
        case .refused(let failure): failure.code
        case .unavailable: "unavailable"
        }
    }

    /// The access log's `reason`, for a request the gateway could not decide.
    var reason: UnavailableReason? {
        if case .unavailable(let reason) = self { return reason }
        return nil
    }
}
