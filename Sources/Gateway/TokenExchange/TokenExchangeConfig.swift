import OAuth

/// A route's `token_exchange:` — the caller's token is never sent upstream; the gateway
/// trades it at the authorization server for one meant for the upstream (RFC 8693) and
/// sends that instead. `TokenExchanger` does the trading and keeps the results.
struct TokenExchangeConfig: Sendable {
    /// The route's index in the config: what its exchanged tokens are kept under.
    var route: Int
    /// The `issuers:` entry of the AS that exchanges, and its `issuer` URL (the `aud` of
    /// client assertions unless the client says `assertion_audience: endpoint`).
    var issuer: String
    var issuerURL: String
    /// The gateway's registration at that AS, and how it authenticates (`clients:`).
    var client: ClientConfig
    /// The token endpoint; nil: the issuer's discovery metadata (`token_endpoint`).
    var endpoint: String?
    /// The CA bundle for the AS's HTTPS endpoints (the issuer's `ca_file`).
    var caFile: String?
    /// What the exchanged token is for: `resource`, `audience`, `scope`, `requested_token_type`.
    var target: TokenExchange.Target
    /// An exchanged token is used until this long before it expires, then exchanged again.
    var margin = 30.0
    /// How long an exchanged token is kept when the AS gives no lifetime at all.
    var defaultLifetime = 60.0
    /// How long an AS's refusal of a subject token is remembered, so that a flood of
    /// requests with a token the AS refuses is not a flood at the AS.
    var negativeTTL = 10.0
    /// `dpop: true`: ask for a DPoP-bound token (RFC 9449 §5, a proof with the exchange) and
    /// send it upstream with a fresh proof from the gateway's key for each request.
    var dpop = false
    /// `mode: id_jag` (Identity Assertion JWT Authorization Grant, Enterprise-Managed
    /// Authorization): the exchange at `issuer` asks for an ID-JAG for the upstream's own AS
    /// (`upstream`), which the gateway then trades there for the token it sends (RFC 7523
    /// jwt-bearer).
    var upstream: UpstreamAuthorizationServer?

    /// The upstream's own authorization server, for `mode: id_jag`.
    struct UpstreamAuthorizationServer: Sendable {
        /// Its `issuers:` entry (its discovered `token_endpoint`, from RFC 8414 metadata) and
        /// issuer URL: the ID-JAG's `aud`.
        var issuer: String
        var issuerURL: String
        var caFile: String?
        /// The gateway's registration there: it authenticates the jwt-bearer grant.
        var client: ClientConfig
    }

    /// The config behind one reference (see `TokenRouteConfig.tokenExchange`).
    final class Stored: Sendable {
        let config: TokenExchangeConfig
        init(_ config: TokenExchangeConfig) { self.config = config }
    }
}
