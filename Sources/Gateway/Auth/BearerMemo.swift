import JOSE
import OAuth
import Reactor

/// What the gateway keeps per client connection across its requests: the peer's trust
/// (per config generation), and what capabilities keep for the connection's lifetime
/// (`state`: the last Bearer token admitted on it, `BearerMemo`). Loop-thread only, like the
/// connection; held in `ClientConnection.context`.
final class ConnectionMemo {
    var peerTrusted = false
    var trustGeneration = -1
    /// Unchecked exclusivity: read on every request of the connection, a slot at a time.
    @exclusivity(unchecked) var state = ConnectionState()
}

/// The last Bearer token a client connection was admitted with on a route, and the
/// admission it gave: the next request on that connection that carries the same
/// `Authorization` field, byte for byte, is admitted without parsing, hashing or checking
/// the token again. Clients keep their connection and present one token on every request.
///
/// It stands for exactly what the full path would decide, so it holds only while that
/// cannot have changed:
/// - the same route (its issuers, scopes and identity headers), under the same config and
///   issuer key sets (`AccessTokenValidator.generation`: a reload or a key update bumps it);
/// - the token was the request's one credential, from the Authorization field, with no
///   `access_token` in the query or a form body (those decide differently, RFC 6750 §2);
/// - until the worker's verified-token cache would drop it (`validUntil`: the token's `exp`,
///   or the cache's ttl since it was verified); with the cache off there is no memo.
///
/// A class: read on every request of its connection, and copied nowhere.
final class BearerMemo {
    /// The connection's memo, in `ConnectionMemo.state`.
    enum Key: ConnectionStateKey { typealias Value = BearerMemo }

    /// The Authorization field's value as received.
    let authorization: [UInt8]
    let routeIndex: Int
    let generation: Int
    let validUntil: Int64
    let caller: AuthenticatedCaller
    /// The route's identity headers for the token's claims (the signed assertion aside: it
    /// has its own cache and lifetime).
    let identity: [(String, String)]
    let subject: String?
    let clientID: String?
    /// What the route's capabilities keep for this token's next request (the token it was
    /// exchanged for, the PDP's last decision, its rate-limit store keys), under their keys.
    /// Unchecked exclusivity: read on every admitted request, a slot at a time.
    @exclusivity(unchecked) var kept = TokenMemoState()

    init(
        authorization: [UInt8], routeIndex: Int, generation: Int, validUntil: Int64, caller: AuthenticatedCaller,
        identity: [(String, String)], subject: String?, clientID: String?
    ) {
        self.authorization = authorization
        self.routeIndex = routeIndex
        self.generation = generation
        self.validUntil = validUntil
        self.caller = caller
        self.identity = identity
        self.subject = subject
        self.clientID = clientID
    }

    /// Whether `fields` carry this memo's token as their one credential.
    func matches(_ fields: HTTP1Fields, query: String?) -> Bool {
        if let query, query.utf8.count >= 12, query.contains("access_token") { return false }
        var n = 0
        var same = false
        let mine = authorization
        fields.forEachValue(named: "Authorization") { value in
            n += 1
            same = value.elementsEqual(mine.span)
        }
        return n == 1 && same
    }
}
