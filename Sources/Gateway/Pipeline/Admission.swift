import JOSE
import MessageSignatures
import OAuth
import Reactor

/// What the authentication stage hands on once a request may pass: the identity headers the
/// route maps, whether a browser session (not a client credential) authenticated it, the body
/// to send on (nil: the client's own stream), and what the identity came from. One per
/// admitted request, which the stages after authentication read and add to: a class, so
/// that handing it on and keeping it on the request moves a reference, not its fields.
final class Admission {
    var identity: [(String, String)]
    /// What admitted it: a token, a session, an API key, or nothing (a CORS preflight).
    var by: AdmittedBy
    /// A form body already read, with its token removed (RFC 6750 §2.2); nil: the client's.
    var body: RequestBody?
    /// The token's or the session's claims.
    let claims: JSONObject
    /// The access token that admitted the request, with its scheme and text (nil: a session
    /// or a preflight admitted it).
    let accessToken: AdmittedToken?
    /// A DPoP-bound token the gateway sends upstream (got by exchange, or the session's): the
    /// upstream request carries a proof.
    var upstreamProof: UpstreamProof? = nil
    /// The connection's memo of this token's admission (`BearerMemo`), where one stands.
    let bearerMemo: BearerMemo?
    /// A browser session (not a client credential) admitted it.
    var session: Bool { by == .session }
    /// A CORS preflight let through by `cors_preflight: allow`: forwarded with no credential.
    var preflight: Bool { by == .preflight }
    /// An API key admitted the request (`token` holds its entry's claims): no field the
    /// key came in goes upstream, Authorization included.
    var byKey: Bool { by == .apiKey }

    /// No credential the client sent goes upstream: a session or a key admitted it.
    var dropsCredential: Bool { by == .session || by == .apiKey }

    /// The verified access token: what an MCP call's rules are checked against.
    var token: VerifiedAccessToken? { accessToken?.token }
    /// The scheme it came with (`Bearer`, `DPoP`): how a refusal is shaped.
    var tokenScheme: String { accessToken?.scheme ?? "Bearer" }
    /// The token as the client presented it: what a `token_exchange` route trades.
    var presentedToken: String? { accessToken?.presented }

    init(
        identity: [(String, String)], session: Bool, body: RequestBody?, claims: JSONObject, preflight: Bool = false,
        token: VerifiedAccessToken? = nil, tokenScheme: String = "Bearer", presentedToken: String? = nil,
        bearerMemo: BearerMemo? = nil
    ) {
        self.identity = identity
        by = preflight ? .preflight : session ? .session : .token
        self.body = body
        self.claims = claims
        accessToken = token.map { AdmittedToken(token: $0, scheme: tokenScheme, presented: presentedToken) }
        self.bearerMemo = bearerMemo
    }
}

/// What admitted a request (`Admission.by`).
enum AdmittedBy {
    /// An access token (Bearer, DPoP), verified.
    case token
    /// A browser session.
    case session
    /// An API key (`api_keys`).
    case apiKey
    /// Nothing: a CORS preflight, which carries no credential (Fetch §3.2.2).
    case preflight
}

/// The access token a request was admitted with: verified, the scheme it came with, and its
/// text as the client presented it (nil when the text is not at hand).
struct AdmittedToken {
    let token: VerifiedAccessToken
    let scheme: String
    let presented: String?
}
