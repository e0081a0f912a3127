import OAuth

/// What authenticating a request decided.
enum AuthDecision {
    case allow(AuthenticatedCaller)
    case deny(AuthDenial)
    /// The gateway cannot decide (keys never loaded, replay store down): 503, not the
    /// caller's fault. `detail` is for the log only.
    case unavailable(UnavailableReason, detail: String)
}

/// A request that passed: its token, and for DPoP the key it proved possession of.
struct AuthenticatedCaller {
    var token: VerifiedAccessToken
    /// RFC 7638 thumbprint of the DPoP key, when the request came with a proof.
    var jkt: String? = nil
    /// Headers for the response to the client (a fresh `DPoP-Nonce`, RFC 9449 §8.2).
    var responseHeaders: [(String, String)] = []
    /// The Bearer token, when it was the request's one credential and came in the
    /// Authorization field (what `BearerMemo` may stand for).
    var fromAuthorization: String? = nil
    /// The access token as the client presented it (what a `token_exchange` route trades).
    var presented = ""
}

/// A wire refusal (RFC 6750 §3, RFC 9449 §7.1): the status, one challenge per scheme the
/// route accepts — the scheme the client used carries the error — extra response headers,
/// and a detail for the log only.
struct AuthDenial {
    var status: Int
    var challenges: [Challenge]
    var headers: [(String, String)] = []
    var detail: String

    /// The challenge that carries the error, if any.
    var primary: Challenge? { challenges.first { $0.error != nil } }
}
