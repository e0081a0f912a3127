import JOSE
import Reactor

/// What a route does to a request besides authenticating it: the path it forwards, the
/// preflights it lets through, and what it tells the upstream about the caller (tokens, a
/// signed identity assertion). Parsed by `ConfigParser.routeOptions`.
struct RouteOptions: Sendable {
    /// `strip_prefix: true`: the matched `path_prefix`, without its trailing `/`, removed from
    /// the path before it goes upstream (the upstream URL's own path is still prepended).
    var strippedPrefix: String? = nil
    /// `cors_preflight: allow`: a CORS preflight (OPTIONS with Origin and
    /// Access-Control-Request-Method, Fetch §3.2.2) goes upstream unauthenticated.
    var corsPreflight = false
    /// `pass_access_token: HEADER`: the session's access token goes upstream in this header
    /// (`Authorization` as `Bearer …`, as `forward_token: true`; any other name bare).
    var passAccessToken: String? = nil
    /// `pass_id_token: HEADER`: the session's ID token goes upstream in this header.
    var passIDToken: String? = nil
    /// `identity_assertion:` a short-lived JWT, signed by the gateway, naming the caller.
    var identityAssertion: IdentityAssertionConfig? = nil
    /// `buffering: false`: the upstream's answer is never spooled to disk for a slow client
    /// (back-pressure pauses the upstream instead), for answers that are streams without
    /// saying so.
    var buffering = true
    /// `request_buffering: false`: the client's body streams to the upstream as it comes
    /// (for uploads the upstream reads as they arrive) instead of being read whole first.
    var requestBuffering = true
    /// `certificate_headers: { HEADER: subject | uri | sha256 }`: what the client's verified
    /// certificate (mutual TLS) tells the upstream; nothing when the client presented none.
    var certificateHeaders: [(header: String, field: CertificateField)] = []

    /// The path as it goes upstream (before the upstream URL's own path): with `strip_prefix`,
    /// what follows the prefix — `/api/x` → `/x`, `/api` → `/` — else the path itself. The
    /// router matched the prefix on a segment boundary (`/api` never matches `/apifoo`).
    func forwardedPath(_ path: String) -> String {
        guard let prefix = strippedPrefix, path.hasPrefix(prefix) else { return path }
        let rest = path.dropFirst(prefix.count)
        return rest.isEmpty ? "/" : String(rest)
    }

    /// Headers this route sets upstream that a client must never send itself, lowercased
    /// (stripped from every request on every route, like identity headers).
    var ownHeaders: [String] {
        var out: [String] = []
        if let h = passAccessToken, h.lowercased() != "authorization" { out.append(h.lowercased()) }
        if let h = passIDToken { out.append(h.lowercased()) }
        if let a = identityAssertion { out.append(a.header.lowercased()) }
        out += certificateHeaders.map { $0.header.lowercased() }
        return out
    }
}

/// A field of a client certificate an upstream can be told.
enum CertificateField: String, Sendable, CaseIterable {
    /// The subject, RFC 4514 (`CN=billing,O=Example`).
    case subject
    /// The first subjectAltName URI: a SPIFFE ID (`spiffe://example.org/ns/prod/sa/billing`).
    case uri
    /// The SHA-256 of the certificate, base64url: what a bound token's `cnf.x5t#S256` says.
    case sha256

    func value(of c: ClientCertificate) -> String? {
        switch self {
        case .subject: c.subject.isEmpty ? nil : c.subject
        case .uri: c.uris.first
        case .sha256: Base64URL.encode(c.sha256)
        }
    }
}

/// `identity_assertion:` of a route (Pomerium's `X-Pomerium-Jwt-Assertion`): lets an upstream
/// that other paths can also reach prove a request came through the gateway.
struct IdentityAssertionConfig: Sendable {
    static let defaultHeader = "X-Tokengate-Assertion"
    var header = IdentityAssertionConfig.defaultHeader
    /// Seconds from iat to exp.
    var lifetime = 60.0
    /// `aud`: the route's upstream URL unless configured.
    var audience: String
    /// `iss`: the gateway's (first) public_url.
    var issuer: String
}

/// One of `identity_assertion_keys`: a private key and the algorithm it signs with.
struct AssertionKey: Sendable {
    var key: JWK
    var alg: JWSAlgorithm
}
