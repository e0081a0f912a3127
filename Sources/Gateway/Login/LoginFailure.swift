/// Why a login could not begin, or its callback was refused or could not be completed
/// before a session was started (after that: `SessionFailure`). The access log's
/// `reason`; the page the browser sees and the log's detail text are as before. Stable
/// codes.
enum LoginFailure: String, CaseIterable, Sendable {
    // Either step.
    /// The client's AS metadata is not loaded.
    case metadataNotLoaded = "metadata_not_loaded"
    /// The pending-login store could not keep or answer.
    case loginStateUnavailable = "login_state_unavailable"

    // Beginning a login.
    /// No authorization endpoint or redirect URI to send the browser to.
    case noAuthorizationEndpoint = "no_authorization_endpoint"
    /// No PKCE challenge could be made (RFC 7636 §4.2).
    case pkceFailed = "pkce_failed"
    /// The request object could not be signed (RFC 9101 §2.1).
    case requestObjectFailed = "request_object_failed"
    /// `request_mode: par`, and the AS has no PAR endpoint (RFC 9126 §5).
    case noPAREndpoint = "no_par_endpoint"
    /// The pushed authorization request failed (RFC 9126 §2.3).
    case parFailed = "par_failed"
    /// `request_mode: request` without a key to sign the request object with.
    case noRequestObjectKey = "no_request_object_key"
    /// `request_mode: request_uri`, and the request object cannot be hosted (RFC 9101 §5.2).
    case requestURIUnavailable = "request_uri_unavailable"
    /// A FAPI 2.0 client bound by its certificate, and an AS that does not say it binds
    /// tokens to certificates (RFC 8705 §3.3).
    case tokensNotBound = "tokens_not_bound"

    // The callback.
    /// No `state` parameter (RFC 6749 §4.1.2).
    case noState = "no_state"
    /// The `state` names no login this browser began (login CSRF, replay, timeout).
    case noPendingLogin = "no_pending_login"
    /// `iss` missing or another AS's (RFC 9207 §2.4).
    case issuerMismatch = "issuer_mismatch"
    /// The authorization response is not valid (RFC 6749 §4.1.2).
    case malformedResponse = "malformed_response"
    /// The JARM response JWT did not verify (signature, `iss`, `aud`, `exp`; FAPI 2.0
    /// Message Signing §5.4), or a `response_mode: jwt` client got a plain response.
    case responseJWTRefused = "response_jwt_refused"
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
