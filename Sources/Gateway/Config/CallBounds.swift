import Reactor

/// How long the gateway waits on each call it makes to a dependency, in one place: every
/// outbound call takes its bound from here, and docs/failure-modes.md lists them. A hung,
/// slow or unreachable dependency then costs a request at most its bound, never more.
/// (The upstream's own bounds are per upstream: `upstreams.NAME.connect_timeout`, `timeout`.)
enum CallBounds {
    /// Connect (DNS and TLS handshake included) and the whole exchange, in seconds.
    struct Bound: Sendable, Equatable {
        var connect: Double
        var total: Double
    }

    /// OpenID Connect Discovery 1.0 §4 and the `jwks_uri` (RFC 7517 §5): on the main loop,
    /// off every request's path. A request waits for a key refetch at most its issuer's
    /// `unknown_kid_wait` (1 s by default), whatever this bound.
    static let keys = Bound(connect: 3, total: 10)
    /// The token endpoint (RFC 6749 §3.2), PAR (RFC 9126 §2) and revocation (RFC 7009 §2):
    /// a login's callback waits this long for its code exchange.
    static let tokenEndpoint = Bound(connect: 3, total: 10)
    /// The userinfo endpoint (OIDC Core §5.3), after the code exchange and after a refresh.
    static let userinfo = Bound(connect: 3, total: 10)
    /// RFC 7662 introspection: a request with an opaque token waits this long at most, then
    /// gets 503 `temporarily_unavailable`.
    static let introspection = Bound(connect: 2, total: 5)
    /// RFC 8693 token exchange toward an upstream (`token_exchange`): a request whose token is
    /// not exchanged yet waits this long at most (its route's upstream `timeout`, when that is
    /// shorter: `TokenExchangeStage`), then gets 503 `temporarily_unavailable`.
    static let tokenExchange = Bound(connect: 2, total: 5)
    /// Redis (sessions, pending logins, DPoP `jti`s, the introspection cache): connect with
    /// its handshake, then each command's reply. Past either the command fails and the
    /// connection is dropped; reconnects back off from 100 ms to 5 s.
    static let redis = Bound(connect: 1, total: 1)
}

extension FetchRequest {
    /// A request to an authorization server under `bound`.
    init(
        url: String, body: [UInt8]? = nil, headers: [String] = [], bound: CallBounds.Bound,
        maxResponseBytes: Int = 1 << 20
    ) {
        self.init(
            url: url, body: body, headers: headers, timeout: bound.total, connectTimeout: bound.connect,
            maxResponseBytes: maxResponseBytes)
    }
}
