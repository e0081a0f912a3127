import Foundation
import JOSE
import OAuth
import Reactor

/// The gateway as an OAuth client at an authorization server's back-channel endpoints, on one
/// worker's loop (its own curl multi handles): PAR (RFC 9126), the token endpoint (code
/// exchange and refresh, RFC 6749 §4.1.3 / §6, optionally DPoP-bound, RFC 9449 §5), and
/// revocation (RFC 7009). Every request carries the client's authentication (RFC 6749
/// §2.3.1, RFC 7523 assertions with `aud` = the issuer or the endpoint URL).
final class AuthorizationServerClient {
    private let loop: EventLoop
    private let fetchers: BackChannelFetchers
    /// Last DPoP-Nonce each token endpoint asked for (RFC 9449 §8).
    var dpopNonces: [String: String] = [:]

    /// "Now" for client assertions, DPoP proofs and signed userinfo answers.
    let wallClock: any WallClock

    init(loop: EventLoop, wallClock: any WallClock) {
        self.loop = loop
        self.wallClock = wallClock
        fetchers = BackChannelFetchers(loop: loop)
    }

    struct Target {
        var client: ClientConfig
        var issuer: IssuerConfig
        /// Proofs for the token endpoint, when the client gets DPoP-bound tokens.
        var dpop: DPoPProofSigner?
    }

    /// POSTs `form` (plus client authentication) to `endpoint`. With DPoP, a
    /// `use_dpop_nonce` answer is retried once with the nonce the AS gave (§8.1).
    func post(
        _ endpoint: String, form: [(String, String)], to t: Target, retried: Bool = false,
        done: @escaping (Result<FetchResponse, FetchError>) -> Void
    ) {
        let now = wallClock.seconds
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        var body = form
        do {
            let audience = t.client.assertionAudience == .endpoint ? endpoint : t.issuer.issuer
            let credentials = try t.client.authentication.credentials(audience: audience, now: now)
            headers += credentials.headers
            body += credentials.form.filter { name, _ in !form.contains { $0.0 == name } }
            if let dpop = t.dpop {
                headers.append(
                    "DPoP: " + (try dpop.proof(method: "POST", url: endpoint, nonce: dpopNonces[endpoint], now: now)))
            }
        } catch {
            done(.failure(FetchError(description: "client authentication: \(error)")))
            return
        }
        let request = FetchRequest(
            url: endpoint, body: Array(FormEncoding.body(body).utf8), headers: headers, bound: CallBounds.tokenEndpoint,
            maxResponseBytes: 256 << 10)
        fetcher(t).fetch(request) { [weak self] result in
            guard let self else { return }
            if t.dpop != nil, case .success(let resp) = result, let nonce = resp.header("dpop-nonce") {
                self.dpopNonces[endpoint] = nonce
                if !retried, resp.status == 400 || resp.status == 401,
                    (try? JSONParser.parseObject(resp.body, what: "error"))?["error"]?.string == "use_dpop_nonce"
                {
                    self.post(endpoint, form: form, to: t, retried: true, done: done)
                    return
                }
            }
            done(result)
        }
    }

    /// RFC 9126 §2: the request object (or plain parameters) pushed; the request_uri back.
    func pushAuthorizationRequest(
        _ endpoint: String, parameters: [(String, String)], to t: Target,
        done: @escaping (Result<PushedAuthorizationResponse, Error>) -> Void
    ) {
        post(endpoint, form: parameters, to: Target(client: t.client, issuer: t.issuer, dpop: nil)) { result in
            switch result {
            case .success(let resp):
                done(Result { try PushedAuthorizationResponse.parse(status: resp.status, body: resp.body) })
            case .failure(let e): done(.failure(e))
            }
        }
    }

    /// Why the token endpoint issued no tokens.
    enum TokenEndpointFailure: Error, Equatable {
        /// The endpoint could not be asked (network, TLS, timeout); what happened, for the log.
        case unreachable(String)
        /// The AS answered with an error (RFC 6749 §5.2) or a body that is not a token response.
        case refused(TokenResponse.Failure)

        /// Stable: logs and tests match on it.
        var code: String {
            switch self {
            case .unreachable: "unreachable"
            case .refused: "refused"
            }
        }

        /// For the log: the AS's `error` code, or what kept the endpoint from answering.
        var error: String {
            switch self {
            case .unreachable(let why): "unreachable: \(why)"
            case .refused(let f): f.error
            }
        }

        /// The AS could not be asked, or failed itself (5xx): no verdict on the grant.
        var isTemporary: Bool {
            switch self {
            case .unreachable: true
            case .refused(let f): f.status >= 500
            }
        }
    }

    /// The token endpoint: a code exchange or a refresh.
    func token(
        _ endpoint: String, grant: [(String, String)], to t: Target,
        done: @escaping (Result<TokenResponse, TokenEndpointFailure>) -> Void
    ) {
        post(endpoint, form: grant, to: t) { result in
            switch result {
            case .success(let resp):
                let parsed = TokenResponse.parse(status: resp.status, body: resp.body)
                if case .success(let tokens) = parsed, !tokens.hasType(dpop: t.dpop != nil) {
                    let wanted = t.dpop != nil ? "DPoP" : "Bearer"
                    let said = String(tokens.tokenType.prefix(40))
                    done(.failure(.refused(.init(error: "token_type \(said), not \(wanted)", status: resp.status))))
                    return
                }
                if case .success(let tokens) = parsed, let why = Self.unbound(tokens.accessToken, t) {
                    done(.failure(.refused(.init(error: why, status: resp.status))))
                    return
                }
                done(parsed.mapError { .refused($0) })
            case .failure(let e): done(.failure(.unreachable(e.description)))
            }
        }
    }

    /// Why a token must not be taken as certificate-bound, or nil: a FAPI 2.0 client whose
    /// sender constraint is its certificate (no DPoP) takes a JWT access token only with
    /// `cnf.x5t#S256` = its certificate's thumbprint (RFC 8705 §3.1). An opaque token cannot be
    /// read; the AS's metadata promised binding before the login began.
    static func unbound(_ accessToken: String, _ t: Target) -> String? {
        guard t.client.profile == .fapi2, t.dpop == nil, let tls = t.client.tls else { return nil }
        // Read, not verified: the token endpoint's answer came over TLS from the AS itself.
        guard let claims = try? CompactJWS(accessToken).claims() else { return nil }
        guard case .object(let cnf)? = claims["cnf"], let bound = cnf["x5t#S256"]?.string else {
            return "the access token is not bound to the client certificate (no cnf.x5t#S256)"
        }
        guard bound == tls.thumbprint else { return "the access token is bound to another certificate" }
        return nil
    }

    /// RFC 7009 §2.1: revokes a token; the outcome only goes to the log (§2.2: 200 either way).
    func revoke(_ endpoint: String, token: String, hint: String, to t: Target, done: @escaping (Int) -> Void) {
        post(
            endpoint, form: [("token", token), ("token_type_hint", hint)],
            to: Target(client: t.client, issuer: t.issuer, dpop: nil)
        ) { result in
            switch result {
            case .success(let resp): done(resp.status)
            case .failure: done(0)
            }
        }
    }

    /// The back-channel fetcher for `t`'s issuer and client (BackChannelFetchers).
    func fetcher(_ t: Target) -> HTTPFetcher {
        fetchers.fetcher(issuer: t.issuer.name, caFile: t.issuer.caFile, client: t.client)
    }
}
