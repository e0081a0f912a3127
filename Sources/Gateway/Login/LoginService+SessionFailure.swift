import Foundation
import OAuth

extension LoginService {
    /// Why a session could not be started or stored: one case per distinct failure, each
    /// with a stable `code` for the access log's `reason`; any text it carries (an ID token
    /// check's, userinfo's, Redis's) is for the log only.
    enum SessionFailure: Error, Equatable, CustomStringConvertible {
        /// The token response has no `id_token` (OIDC Core §3.1.3.3).
        case noIDToken
        /// The issuer's keys were never loaded: the ID token cannot be checked.
        case keysNotLoaded(issuer: String)
        /// The ID token failed OIDC Core §3.1.3.7; why, for the log.
        case idTokenRefused(String)
        /// A step-up login's ID token does not say the authentication it asked for (OIDC Core
        /// §3.1.2.1, §2: `acr` not one of `acr_values`, `auth_time` missing or past `max_age`).
        case authenticationInsufficient(AuthorizationRequirement.StepUpFailure)
        /// The ID token's `sub` is missing, empty or not a string.
        case invalidSubject
        /// The userinfo answer is about another `sub` (OIDC Core §5.3.2).
        case userinfoSubjectMismatch
        /// Userinfo was refused, malformed or too large; why, for the log.
        case userinfoRefused(String)
        /// The userinfo endpoint could not be asked (network, 5xx); why, for the log.
        case userinfoUnreachable(String)
        /// The session was ended (logout) while this update was on its way.
        case ended
        /// Another replica refreshed the session since this update's basis was read.
        case superseded
        /// The store did not keep the session (`SessionStoreError` other than the two above).
        case notStored(SessionStoreError)
        /// The sealed session is too large for the cookies a browser keeps.
        case doesNotFitInCookies

        /// The store's refusal, as the session's failure.
        init(_ e: SessionStoreError) {
            switch e {
            case .ended: self = .ended
            case .superseded: self = .superseded
            default: self = .notStored(e)
            }
        }

        /// Stable: logs and tests match on it; new kinds get new codes.
        var code: String {
            switch self {
            case .noIDToken: "no_id_token"
            case .keysNotLoaded: "keys_not_loaded"
            case .idTokenRefused: "id_token_refused"
            case .authenticationInsufficient: "insufficient_user_authentication"
            case .invalidSubject: "invalid_sub"
            case .userinfoSubjectMismatch: "userinfo_sub_mismatch"
            case .userinfoRefused: "userinfo_refused"
            case .userinfoUnreachable: "userinfo_unreachable"
            case .ended: "session_ended"
            case .superseded: "session_superseded"
            case .notStored: "session_not_stored"
            case .doesNotFitInCookies: "session_too_large_for_cookies"
            }
        }

        /// Not the user's fault nor the AS's refusal: the gateway answers 503 and the user
        /// tries again, rather than "sign-in failed".
        var isUnavailable: Bool {
            switch self {
            case .userinfoUnreachable, .notStored: true
            default: false
            }
        }

        var description: String {
            switch self {
            case .noIDToken: "the token response has no ID token"
            case .keysNotLoaded(let issuer): "no keys loaded for \(issuer)"
            case .idTokenRefused(let why): "ID token refused: \(why)"
            case .authenticationInsufficient(let why): "step-up login: ID token refused: \(why)"
            case .invalidSubject: "the ID token's sub is not a string"
            case .userinfoSubjectMismatch:
                "the userinfo endpoint answered for another sub than the ID token's (OIDC Core §5.3.2)"
            case .userinfoRefused(let why), .userinfoUnreachable(let why): "userinfo: \(why)"
            case .ended: "the session was ended"
            case .superseded: "session store: \(SessionStoreError.superseded)"
            case .notStored(let e): "session store: \(e)"
            case .doesNotFitInCookies: "the session does not fit in cookies; use store: redis://…"
            }
        }
    }
}
