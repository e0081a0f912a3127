import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// Failure kinds carry stable codes: metric labels and log fields come from them, and the
/// values dashboards already count by do not change.
@Suite("Error kinds: each kind maps to its stable code and metric label")
struct ErrorKindTests {
    /// `tokengate_auth_failures_total{error=…}` as it was labelled when the label was a string:
    /// the RFC 6750 / RFC 9449 error code sent, `no_credentials`, `login_required`.
    static let authFailureLabels: Set<String> = [
        "no_credentials", "invalid_request", "invalid_token", "insufficient_scope", "invalid_dpop_proof",
        "use_dpop_nonce", "insufficient_user_authentication", "login_required"
    ]

    @Test func authFailureLabelSetIsTheOneDashboardsCount() {
        #expect(Set(AuthFailure.allCases.map(\.code)) == Self.authFailureLabels)
        #expect(AuthFailure.allCases.count == Self.authFailureLabels.count)
    }

    @Test(arguments: [
        OAuthErrorCode.invalid_request, .invalid_token, .insufficient_scope, .invalid_dpop_proof, .use_dpop_nonce
    ])
    func aWireErrorCountsUnderItsOwnCode(_ error: OAuthErrorCode) {
        // The label is the code the client was sent, byte for byte.
        #expect(AuthFailure(error).code == error.rawValue)
        let denial = AuthDenial(
            status: error.status, challenges: [Challenge(scheme: "Bearer"), Challenge(scheme: "DPoP", error: error)],
            detail: "x")
        #expect(AuthFailure(denial).code == error.rawValue)
    }

    @Test func aBareChallengeCountsAsNoCredentials() {
        let denial = AuthDenial(status: 401, challenges: [Challenge(scheme: "Bearer")], detail: "no credentials")
        #expect(AuthFailure(denial) == .noCredentials)
        #expect(AuthFailure.noCredentials.code == "no_credentials")
        #expect(AuthFailure.loginRequired.code == "login_required")
    }

    @Test func everyAuthFailureIsExportedUnderItsCode() {
        let m = WorkerMetrics()
        for (n, kind) in AuthFailure.allCases.enumerated() {
            for _ in 0...n { m.authFailure(kind) }
        }
        let text = m.snapshot(upstreamConnections: [:], clientConnections: 0, tokenCache: (0, 0)).prometheusText(
            ready: true)
        for (n, kind) in AuthFailure.allCases.enumerated() {
            #expect(text.contains("tokengate_auth_failures_total{error=\"\(kind.code)\"} \(n + 1)\n"))
        }
        let labels = text.split(separator: "\n").filter { $0.hasPrefix("tokengate_auth_failures_total{") }
        #expect(labels.count == AuthFailure.allCases.count)
        // Sorted by label, as before.
        #expect(labels.map { String($0) } == labels.map { String($0) }.sorted())
    }

    @Test func theWorkerCountsARefusalUnderTheCodeItSent() throws {
        let w = try WorkerExchangeTests.worker()
        for authorization in [nil, "Bearer a b", "Bearer not-a-jwt"] {
            var fields: [(name: String, value: String)] = [("Host", "a")]
            if let authorization { fields.append(("Authorization", authorization)) }
            let (exchange, _) = InMemoryTransport.exchange("GET", "/api/x", fields: fields, body: nil)
            w.handle(exchange)
        }
        #expect(w.metrics.authFailures == [.noCredentials: 1, .invalidRequest: 1, .invalidToken: 1])
    }

    @Test func workersMergeCountsPerKind() {
        var total = MetricsSnapshot()
        for _ in 0..<2 {
            let m = WorkerMetrics()
            m.authFailure(.invalidToken)
            total.add(m.snapshot(upstreamConnections: [:], clientConnections: 0, tokenCache: (0, 0)))
        }
        #expect(total.authFailures == [.invalidToken: 2])
        #expect(
            total.prometheusText(ready: true).contains("tokengate_auth_failures_total{error=\"invalid_token\"} 2\n"))
    }

    @Test func rejectionsLogTheirCodeAndReason() {
        #expect(Rejection.refused(.insufficientScope).code == "insufficient_scope")
        #expect(Rejection.refused(.loginRequired).code == "login_required")
        #expect(Rejection.refused(.noCredentials).reason == nil)
        for reason in UnavailableReason.allCases {
            #expect(Rejection.unavailable(reason).code == "unavailable")
            #expect(Rejection.unavailable(reason).reason == reason)
        }
    }

    @Test func unavailableReasonsHaveDistinctStableCodes() {
        #expect(
            UnavailableReason.allCases.map(\.code) == [
                "keys_not_loaded", "introspection_unavailable", "replay_store_unavailable", "replay_store_refused",
                "session_store_unavailable", "session_not_saved", "token_not_refreshed",
                "token_not_exchanged", "upstream_credential_unavailable", "revocation_not_stored"
            ])
    }

    static let storeErrors: [(SessionStoreError, code: String, description: String)] = [
        (.ended, "ended", "session ended"),
        (.superseded, "superseded", "the session was refreshed elsewhere since it was read"),
        (.tooLarge, "too_large", "a session field is too large"),
        (.idTaken, "id_taken", "session id taken"),
        (.notIndexed, "not_indexed", "the session could not be indexed"),
        (.unexpectedReply("integer(7)"), "unexpected_reply", "unexpected Redis reply integer(7)"),
        (.unavailable("connection refused"), "unavailable", "connection refused")
    ]

    @Test func sessionStoreErrorsHaveStableCodesAndTheirOldLogText() {
        for (error, code, description) in Self.storeErrors {
            #expect(error.code == code)
            #expect(error.description == description)
        }
        #expect(Set(Self.storeErrors.map(\.code)).count == Self.storeErrors.count)
    }

    @Test func aStoreRefusalBecomesTheSessionFailureOfItsKind() {
        typealias F = LoginService.SessionFailure
        #expect(F(SessionStoreError.ended) == .ended)
        #expect(F(SessionStoreError.superseded) == .superseded)
        for e in [SessionStoreError.tooLarge, .idTaken, .notIndexed, .unexpectedReply("x"), .unavailable("down")] {
            #expect(F(e) == .notStored(e))
            // A store that did not keep the session: 503, try again (not "sign-in failed").
            #expect(F(e).isUnavailable)
            #expect(F(e).description == "session store: \(e)")
        }
        #expect(!F(SessionStoreError.ended).isUnavailable)
        #expect(!F(SessionStoreError.superseded).isUnavailable)
    }

    static let sessionFailures: [(LoginService.SessionFailure, code: String, unavailable: Bool, description: String)] =
        [
            (.noIDToken, "no_id_token", false, "the token response has no ID token"),
            (.keysNotLoaded(issuer: "one"), "keys_not_loaded", false, "no keys loaded for one"),
            (.idTokenRefused("expired"), "id_token_refused", false, "ID token refused: expired"),
            (.invalidSubject, "invalid_sub", false, "the ID token's sub is not a string"),
            (
                .userinfoSubjectMismatch, "userinfo_sub_mismatch", false,
                "the userinfo endpoint answered for another sub than the ID token's (OIDC Core §5.3.2)"
            ),
            (.userinfoRefused("answered 403"), "userinfo_refused", false, "userinfo: answered 403"),
            (.userinfoUnreachable("answered 502"), "userinfo_unreachable", true, "userinfo: answered 502"),
            (.ended, "session_ended", false, "the session was ended"),
            (
                .superseded, "session_superseded", false,
                "session store: the session was refreshed elsewhere since it was read"
            ),
            (.notStored(.unavailable("down")), "session_not_stored", true, "session store: down"),
            (
                .doesNotFitInCookies, "session_too_large_for_cookies", false,
                "the session does not fit in cookies; use store: redis://…"
            )
        ]

    @Test func sessionFailuresHaveStableCodesAndTheirOldLogText() {
        for (failure, code, unavailable, description) in Self.sessionFailures {
            #expect(failure.code == code)
            #expect(failure.isUnavailable == unavailable, "\(code)")
            #expect(failure.description == description)
        }
        #expect(Set(Self.sessionFailures.map(\.code)).count == Self.sessionFailures.count)
    }

    @Test func aTokenEndpointFailureSaysWhetherTheGrantWasJudged() {
        typealias T = AuthorizationServerClient.TokenEndpointFailure
        let down = T.unreachable("Couldn't connect to server")
        #expect(down.code == "unreachable" && down.isTemporary)
        #expect(down.error == "unreachable: Couldn't connect to server")
        let failing = T.refused(TokenResponse.Failure(error: "server_error", status: 503))
        #expect(failing.code == "refused" && failing.isTemporary && failing.error == "server_error")
        // RFC 6749 §5.2: a 4xx is the AS's verdict on the grant (a refresh then ends the session).
        let refused = T.refused(TokenResponse.Failure(error: "invalid_grant", status: 400))
        #expect(refused.code == "refused" && !refused.isTemporary && refused.error == "invalid_grant")
    }

    @Test func loginFailuresHaveDistinctStableCodes() {
        #expect(
            LoginFailure.allCases.map(\.code) == [
                "metadata_not_loaded", "login_state_unavailable", "no_authorization_endpoint", "pkce_failed",
                "request_object_failed", "no_par_endpoint", "par_failed", "no_request_object_key",
                "request_uri_unavailable", "tokens_not_bound", "no_state", "no_pending_login", "issuer_mismatch",
                "malformed_response",
                "response_jwt_refused", "authorization_error", "no_token_endpoint", "token_endpoint_unreachable",
                "code_refused"
            ])
        // A login step's reason never reads as a session failure's.
        let sessionCodes = Set(Self.sessionFailures.map(\.code))
        #expect(sessionCodes.isDisjoint(with: LoginFailure.allCases.map(\.code)))
    }

    @Test func logoutTokenRefusalsHaveDistinctStableCodes() {
        #expect(
            BackChannelLogout.LogoutTokenRefusal.allCases.map(\.code) == [
                "no_logout_token", "malformed_logout_token", "unknown_client", "invalid_logout_token",
                "logout_token_replayed"
            ])
    }

    @Test func userinfoFailuresSayWhetherTheASCouldBeAsked() {
        typealias U = AuthorizationServerClient.UserinfoFailure
        func parse(_ status: Int, _ type: String = "application/json", _ body: String = "{}") -> Result<JSONObject, U> {
            AuthorizationServerClient.parseUserinfo(
                FetchResponse(status: status, headers: [("content-type", type)], body: Array(body.utf8)))
        }
        #expect(parse(502).failure == .unreachable("userinfo endpoint answered 502"))
        #expect(parse(401).failure == .refused("userinfo endpoint answered 401"))
        #expect(
            parse(200, "text/html").failure == .refused("userinfo endpoint answered text/html, not application/json"))
        guard case .refused? = parse(200, "application/json", "[1]").failure else {
            Issue.record("a JSON array was taken as userinfo")
            return
        }
        #expect(U.unreachable("x").code == "userinfo_unreachable" && U.refused("x").code == "userinfo_refused")
        #expect(U.refused("why").description == "why")
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let f) = self { return f }
        return nil
    }
}
