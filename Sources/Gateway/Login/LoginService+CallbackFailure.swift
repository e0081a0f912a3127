extension LoginService {
    /// Why a login callback was refused or could not be completed before a session was
    /// started (after that: `SessionFailure`). The access log's `reason`; the page the browser
    /// sees and the log's detail text are as before. Stable codes.
    enum CallbackFailure: String, CaseIterable, Sendable {
        /// No `state` parameter (RFC 6749 §4.1.2).
        case noState = "no_state"
        /// The `state` names no login this browser began (login CSRF, replay, timeout).
        case noPendingLogin = "no_pending_login"
        /// The pending-login store could not answer.
        case loginStateUnavailable = "login_state_unavailable"
        /// The client's AS metadata is not loaded.
        case metadataNotLoaded = "metadata_not_loaded"
        /// `iss` missing or another AS's (RFC 9207 §2.4).
        case issuerMismatch = "issuer_mismatch"
        /// The authorization response is not valid (RFC 6749 §4.1.2).
        case malformedResponse = "malformed_response"
        /// The AS answered with an error (RFC 6749 §4.1.2.1).
        case authorizationError = "authorization_error"
        /// No token endpoint or redirect URI to redeem the code with.
        case noTokenEndpoint = "no_token_endpoint"
        /// The token endpoint could not be asked.
        case tokenEndpointUnreachable = "token_endpoint_unreachable"
        /// The token endpoint refused the code (RFC 6749 §5.2).
        case codeRefused = "code_refused"

        var code: String { rawValue }
    }
}
