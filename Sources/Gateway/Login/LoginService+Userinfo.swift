import Foundation
import JOSE
import OAuth

/// `userinfo: true` on a client: at login and after each refresh the userinfo endpoint (OIDC
/// Core §5.3) is asked with the new access token. Its `sub` must be the ID token's (§5.3.2:
/// otherwise the answer "MUST NOT be used" — a token substitution); its other claims are
/// merged over the ID token's, so `require.claims` and `headers` can use claims (groups …)
/// that only userinfo carries. Bounded: the answer (64 KB), the number of its claims, and the
/// bytes the session keeps from it (the session may ride in cookies).
extension LoginService {
    /// At most this many claims in a userinfo answer.
    static let maxUserinfoClaims = 100
    /// At most this many bytes (JSON) of the claims a session keeps from userinfo.
    static let maxUserinfoKeptBytes = 4096
    /// Claims about the token, not the user: never taken from userinfo.
    static let tokenClaims: Set<String> = ["iss", "aud", "azp", "exp", "iat", "nbf", "jti", "nonce", "at_hash", "c_hash",
                                           "sid", "auth_time", "acr", "amr", "cnf", "scope"]

    enum UserinfoOutcome {
        /// The claims to keep, userinfo merged in (or the same claims: the client does not use userinfo).
        case claims(JSONObject)
        /// The answer is for someone else (§5.3.2): the login fails, a session ends.
        case subjectMismatch
        /// Refused, malformed or too large; `unreachable`: the AS could not be asked.
        case failed(String, unreachable: Bool)
    }

    /// `idClaims` (the verified ID token's, or the session's own) with userinfo merged when the
    /// client asks for it.
    func mergeUserinfo(_ idClaims: JSONObject, subject: String, accessToken: String?, client: ClientConfig, issuer: IssuerConfig,
                       done: @escaping (UserinfoOutcome) -> Void) {
        guard client.login.userinfo else { done(.claims(idClaims)); return }
        guard let issuerName = client.issuer, let endpoint = metadata(issuerName)?.userinfoEndpoint else {
            done(.failed("the AS's metadata has no userinfo_endpoint (clients.\(client.name).userinfo is true)", unreachable: true)); return
        }
        guard let accessToken else { done(.failed("no access token to ask the userinfo endpoint with", unreachable: false)); return }
        server.userinfo(endpoint, accessToken: accessToken, to: serverTarget(client, issuer)) { [keptClaims] result in
            switch result {
            case .failure(let f): done(.failed(f.description, unreachable: f.unreachable))
            case .success(let info): done(Self.merge(info, into: idClaims, subject: subject, kept: keptClaims))
            }
        }
    }

    static func merge(_ info: JSONObject, into idClaims: JSONObject, subject: String, kept: Set<String>) -> UserinfoOutcome {
        guard let sub = info["sub"]?.string, sub == subject else { return .subjectMismatch }
        guard info.count <= maxUserinfoClaims else {
            return .failed("the userinfo answer has \(info.count) claims (at most \(maxUserinfoClaims))", unreachable: false)
        }
        var merged = idClaims
        var keptBytes = 0
        for name in info.names where !tokenClaims.contains(name) && name != "sub" {
            guard let value = info[name] else { continue }
            if kept.contains(name) { keptBytes += name.utf8.count + JSONSerializer.serialize(value).utf8.count }
            merged[name] = value
        }
        // A changed address is only as verified as userinfo says it is.
        if info["email"] != nil && info["email_verified"] == nil { merged["email_verified"] = nil }
        guard keptBytes <= maxUserinfoKeptBytes else {
            return .failed("the userinfo claims the session keeps take \(keptBytes) bytes (at most \(maxUserinfoKeptBytes))", unreachable: false)
        }
        return .claims(merged)
    }
}

extension LoginService {
    /// After a refresh: userinfo asked again with the new access token. Another `sub` ends the
    /// session; an answer that cannot be had (AS down, refused, too large) keeps the claims
    /// the session had (a new ID token's win; the old session's fill in what only userinfo
    /// gave), and the log says why.
    func refreshUserinfo(_ fresh: Session, previous: Session, accessToken: String?, client: ClientConfig, issuer: IssuerConfig,
                         done: @escaping (RefreshCoordinator.Outcome) -> Void) {
        guard client.login.userinfo else { done(.refreshed(fresh)); return }
        mergeUserinfo(fresh.claims, subject: fresh.subject, accessToken: accessToken, client: client, issuer: issuer) { [weak self] outcome in
            guard let self else { return }
            var session = fresh
            switch outcome {
            case .claims(let merged):
                var kept = JSONObject()
                for name in merged.names where self.keptClaims.contains(name) { kept[name] = merged[name] }
                // An address userinfo changed, or calls unverified, is dropped (as at login).
                if kept["email"] != nil, !client.login.allowUnverifiedEmail,
                   merged["email_verified"] == .bool(false) || (kept["email"] != fresh.claims["email"] && merged["email_verified"] != .bool(true)) {
                    kept["email"] = nil
                }
                session.claims = kept
                done(.refreshed(session))
            case .subjectMismatch:
                self.log.warning("userinfo after a refresh answered for another sub; the session ends", metadata: ["client": .string(client.name)])
                done(.ended)
            case .failed(let why, _):
                self.log.warning("userinfo after a refresh failed; the session keeps its claims", metadata: ["client": .string(client.name), "error": .string(why)])
                for name in previous.claims.names where session.claims[name] == nil { session.claims[name] = previous.claims[name] }
                done(.refreshed(session))
            }
        }
    }
}
