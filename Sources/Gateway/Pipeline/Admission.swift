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
    var session: Bool
    /// A form body already read, with its token removed (RFC 6750 §2.2); nil: the client's.
    var body: RequestBody?
    /// The token's or the session's claims.
    var claims: JSONObject
    /// A CORS preflight let through by `cors_preflight: allow`: forwarded with no credential.
    var preflight = false
    /// The access token that admitted the request, and the scheme it came with (`Bearer`,
    /// `DPoP`): what an MCP call's rules are checked against and how a refusal is shaped.
    var token: VerifiedAccessToken? = nil
    var tokenScheme = "Bearer"
    /// That token as the client presented it: what a `token_exchange` route trades.
    var presentedToken: String? = nil
    /// A DPoP-bound token the gateway sends upstream (got by exchange, or the session's): the
    /// upstream request carries a proof.
    var upstreamProof: UpstreamProof? = nil
    /// The connection's memo of this token's admission (`BearerMemo`), where one stands.
    var bearerMemo: BearerMemo? = nil
    /// The tool an MCP `tools/call` names, once the MCP stage has read it (`tool` limits).
    var mcpTool: String? = nil
    /// A verified signature's `Content-Digest` (`verify_signature`), compared with the body
    /// once it is read whole.
    var contentDigest: ContentDigest? = nil
    /// The label of the request signature `verify_signature` verified: what a signed answer's
    /// `"signature";req;key=…` names.
    var verifiedSignatureLabel: String? = nil

    init(
        identity: [(String, String)], session: Bool, body: RequestBody?, claims: JSONObject, preflight: Bool = false,
        token: VerifiedAccessToken? = nil, tokenScheme: String = "Bearer", presentedToken: String? = nil,
        bearerMemo: BearerMemo? = nil
    ) {
        self.identity = identity
        self.session = session
        self.body = body
        self.claims = claims
        self.preflight = preflight
        self.token = token
        self.tokenScheme = tokenScheme
        self.presentedToken = presentedToken
        self.bearerMemo = bearerMemo
    }
}
