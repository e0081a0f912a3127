import JOSE
import OAuth
import Reactor

/// A key's caller on a route with `api_keys` (beside tokens) or `auth: api_key` (alone): the
/// key is looked up in its set's table (one hash, one lookup) and, when it is valid, stands
/// for a token with the entry's claims, so `require`, identity headers, rate limits, policy
/// and MCP rules judge it as they judge a token's caller. It is never a token: it does not go
/// to an issuer (no introspection, no cache, no connection memo), it is not exchanged, and
/// it goes upstream in no field.
extension TokenStage {
    /// The token a key's entry stands for: the claims its table made for it (or makes them
    /// now, for an entry outside a table).
    static func token(of entry: APIKeyEntry, set: String, now: Double) -> VerifiedAccessToken {
        let claims = entry.admittedClaims ?? entry.tokenClaims(set: set)
        // A key without `expires` still needs a horizon for what reads one (a tunnel closes
        // only at a key's own expiry: see `admitKey`).
        let horizon = Int64(now) + NumericDate.longestLifetime
        return VerifiedAccessToken(issuer: set, claims: claims, expiresAt: entry.expires ?? horizon, confirmation: nil)
    }

    /// Decides on the key the request carries: admits (`.proceed`) or answers.
    func admitKey(_ request: RoutedRequest, key: [UInt8], sets: [String]) -> StageOutcome {
        let ctx = request.context
        let now = validator.wallClock.now
        // FAPI 2.0 Security Profile §5.3.4: sender-constrained tokens only; a key is a bearer
        // credential. Refused before the lookup, so the answer says nothing of the key (the
        // config refuses `api_keys` beside such issuers; this stands if one slips through).
        if !tokens.boundOnlyIssuers.isEmpty {
            return refuse(
                request,
                denial(
                    .invalid_token, "this route takes sender-constrained tokens only; an API key is not",
                    detail: "api key on a profile: fapi2 route"))
        }
        var outcome = APIKeyTable.Outcome.unknown
        var set = sets[0]
        for name in sets {
            guard let table = apiKeys[name] else { continue }
            set = name
            outcome = table.check(key, now: now)
            if outcome != .unknown { break }
        }
        apiKeys.record(set: set, outcome: outcome.label)
        guard case .valid(let entry) = outcome else { return refuse(request, keyDenial(outcome)) }
        let token = Self.token(of: entry, set: set, now: now)
        // `require` as a token meets it; `acr` and `max_age` never pass (a key has no login).
        if var denial = rules.refusals.authorize(token, scheme: "Bearer") {
            if tokens.keysOnly {
                for i in denial.challenges.indices { denial.challenges[i].scheme = tokens.apiKeys.challengeScheme }
            }
            return refuse(request, denial)
        }
        ctx.authenticated(CallerIdentity(subject: entry.sub, clientID: entry.clientID, issuer: set, apiKey: entry.id))
        apiKeys.used(set, id: entry.id, at: now)
        // A tunnel opened with a key ends when the key expires: on a keys-only route always, on
        // one that takes tokens too as its tokens' tunnels do (`close_at_token_expiry`).
        if ctx.kind.isUpgrade, tokens.keysOnly || tokens.closeAtTokenExpiry, let expires = entry.expires {
            ctx.tunnel.tokenExpiry = expires
        }
        var identity = self.identity.headers(route, token.claims, ctx)
        UpstreamIdentity.appendPathParameterHeaders(route, ctx, to: &identity)
        if let a = assertion(token, request) { identity.append(a) }
        let admission = Admission(identity: identity, session: false, body: nil, claims: token.claims, token: token)
        admission.by = .apiKey
        request.admission = admission
        return .proceed
    }

    /// 401 for a request without a key on a keys-only route (no error code, RFC 6750 §3.1).
    func noKey(_ request: RoutedRequest) -> StageOutcome {
        refuse(
            request,
            AuthDenial(
                status: 401, challenges: [Challenge(scheme: tokens.apiKeys.challengeScheme, realm: tokens.realm)],
                detail: "no API key"))
    }

    /// 400 for two credentials, or one key sent twice: the gateway does not pick one.
    func ambiguous(_ request: RoutedRequest, _ why: String) -> StageOutcome {
        refuse(request, denial(.invalid_request, why, status: 400))
    }

    /// The refusal of a key that is not valid. The error says which of the four it is: the
    /// key's holder can act on it (a typo, an old key, one staged for later), and none of it
    /// tells a guesser anything a wrong guess would not.
    private func keyDenial(_ outcome: APIKeyTable.Outcome) -> AuthDenial {
        switch outcome {
        case .malformed(let why):
            denial(.invalid_token, "the API key is malformed", detail: "api key malformed: \(why)")
        case .expired(let e): denial(.invalid_token, "the API key has expired", detail: "api key \(e.id) expired")
        case .notYetValid(let e):
            denial(.invalid_token, "the API key is not valid yet", detail: "api key \(e.id) not yet valid")
        case .unknown, .valid: denial(.invalid_token, "the API key is not known", detail: "api key unknown")
        }
    }

    /// A refusal shaped for the route: with the Bearer challenge on a route that also takes
    /// tokens, with the keys' own scheme on a keys-only one.
    private func denial(_ code: OAuthErrorCode, _ description: String, status: Int = 401, detail: String? = nil)
        -> AuthDenial
    {
        guard tokens.keysOnly else {
            return rules.refusals.refuse(status, code, description, scheme: "Bearer", detail: detail)
        }
        return AuthDenial(
            status: status,
            challenges: [
                Challenge(
                    scheme: tokens.apiKeys.challengeScheme, realm: tokens.realm, error: code,
                    errorDescription: description)
            ],
            detail: detail ?? description)
    }

    private func refuse(_ request: RoutedRequest, _ denial: AuthDenial) -> StageOutcome {
        let ctx = request.context
        let failure = AuthFailure(denial)
        ctx.rejection = .refused(failure)
        metrics.authFailure(failure)
        return .answer(ErrorResponse.auth(denial, requestID: ctx.requestID), close: request.hasContent)
    }
}
