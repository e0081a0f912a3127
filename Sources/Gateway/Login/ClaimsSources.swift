import Foundation
import JOSE
import Logging
import OAuth

/// Where a session's claims come from besides its ID token: the userinfo endpoint (below)
/// and aggregated and distributed claims (ClaimsSources+Distributed.swift). Asked at login and
/// after each refresh, never on a request. Made per use by `LoginService.claimsSources`, with
/// the claims the config in force keeps.
struct ClaimsSources {
    let server: AuthorizationServerClient
    let keys: IssuerKeyResolver
    let log: Logger
    let wallClock: any WallClock
    /// The claims a session keeps (`LoginService.keptClaims`).
    let kept: Set<String>

    /// The client whose claims are asked for, and how its AS is reached.
    struct Client {
        let client: ClientConfig
        let issuer: IssuerConfig
        let target: AuthorizationServerClient.Target
        /// The AS's userinfo endpoint, from its metadata (nil: not loaded, or none).
        let userinfoEndpoint: String?
    }

    /// At most this many claims in a userinfo answer.
    static let maxUserinfoClaims = 100
    /// At most this many bytes (JSON) of the claims a session keeps from userinfo.
    static let maxUserinfoKeptBytes = 4096
    /// Claims about the token, not the user: never taken from userinfo.
    static let tokenClaims: Set<String> = [
        "iss", "aud", "azp", "exp", "iat", "nbf", "jti", "nonce", "at_hash", "c_hash",
        "sid", "auth_time", "acr", "amr", "cnf", "scope"
    ]

    enum UserinfoOutcome {
        /// The claims to keep, userinfo merged in (or the same claims: the client does not use userinfo).
        case claims(JSONObject)
        /// The answer is for someone else (§5.3.2): the login fails, a session ends.
        case subjectMismatch
        /// Refused, malformed or too large, or the AS could not be asked.
        case failed(AuthorizationServerClient.UserinfoFailure)
    }

    /// `userinfo: true` on a client: at login and after each refresh the userinfo endpoint (OIDC
    /// Core §5.3) is asked with the new access token. Its `sub` must be the ID token's (§5.3.2:
    /// otherwise the answer "MUST NOT be used" — a token substitution); its other claims are
    /// merged over the ID token's, so `require.claims` and `headers` can use claims (groups …)
    /// that only userinfo carries. Bounded: the answer (64 KB), the number of its claims, and the
    /// bytes the session keeps from it (the session may ride in cookies).
    ///
    /// `idClaims` (the verified ID token's, or the session's own) with userinfo merged when the
    /// client asks for it.
    func mergeUserinfo(
        _ idClaims: JSONObject, subject: String, accessToken: String?, for asking: Client,
        done: @escaping (UserinfoOutcome) -> Void
    ) {
        let client = asking.client
        guard client.login.userinfo else {
            done(.claims(idClaims))
            return
        }
        guard let endpoint = asking.userinfoEndpoint else {
            done(
                .failed(
                    .unreachable(
                        "the AS's metadata has no userinfo_endpoint (clients.\(client.name).userinfo is true)")))
            return
        }
        guard let accessToken else {
            done(.failed(.refused("no access token to ask the userinfo endpoint with")))
            return
        }
        server.userinfo(endpoint, accessToken: accessToken, to: asking.target) { [kept] result in
            switch result {
            case .failure(let f): done(.failed(f))
            case .success(let info): done(Self.merge(info, into: idClaims, subject: subject, kept: kept))
            }
        }
    }

    static func merge(_ info: JSONObject, into idClaims: JSONObject, subject: String, kept: Set<String>)
        -> UserinfoOutcome
    {
        guard let sub = info["sub"]?.string, sub == subject else { return .subjectMismatch }
        guard info.count <= maxUserinfoClaims else {
            return .failed(.refused("the userinfo answer has \(info.count) claims (at most \(maxUserinfoClaims))"))
        }
        var merged = idClaims
        var keptBytes = 0
        for name in info.names where !tokenClaims.contains(name) && name != "sub" && name != DistributedClaims.record {
            guard let value = info[name] else { continue }
            if kept.contains(name) { keptBytes += name.utf8.count + JSONSerializer.serialize(value).utf8.count }
            merged[name] = value
        }
        // A changed address is only as verified as userinfo says it is.
        if info["email"] != nil && info["email_verified"] == nil { merged["email_verified"] = nil }
        guard keptBytes <= maxUserinfoKeptBytes else {
            return .failed(
                .refused(
                    "the userinfo claims the session keeps take \(keptBytes) bytes (at most \(maxUserinfoKeptBytes))"
                ))
        }
        return .claims(merged)
    }
}

extension ClaimsSources {
    /// After a refresh: userinfo asked again with the new access token. Only an AS that cannot
    /// be asked (network error, 5xx) lets the session keep the claims it had (a new ID token's
    /// win; the old session's fill in what only userinfo gave) — and only until the next
    /// refresh: a second unreachable refresh ends it, so stale groups cannot outlive one access
    /// token's lifetime. Any other failure (another `sub`, an answer refused as too large, with
    /// too many claims, not JSON, a 4xx) ends the session: a user whose userinfo grew past the
    /// bounds must not keep the groups they had before. The log says why.
    func refreshUserinfo(
        _ fresh: Session, previous: Session, accessToken: String?, for asking: Client,
        done: @escaping (RefreshCoordinator.Outcome) -> Void
    ) {
        let client = asking.client
        guard client.login.userinfo else {
            done(.refreshed(fresh))
            return
        }
        mergeUserinfo(fresh.claims, subject: fresh.subject, accessToken: accessToken, for: asking) { outcome in
            var session = fresh
            switch outcome {
            case .claims(let merged):
                session.userinfoStaleSince = nil
                var kept = JSONObject()
                for name in merged.names where self.kept.contains(name) || name == DistributedClaims.record {
                    kept[name] = merged[name]
                }
                // An address userinfo changed, or calls unverified, is dropped (as at login).
                if kept["email"] != nil, !client.login.allowUnverifiedEmail,
                    merged["email_verified"] == .bool(false)
                        || (kept["email"] != fresh.claims["email"] && merged["email_verified"] != .bool(true))
                {
                    kept["email"] = nil
                }
                session.claims = kept
                done(.refreshed(session))
            case .subjectMismatch:
                self.log.warning(
                    "userinfo after a refresh answered for another sub; the session ends",
                    metadata: ["client": .string(client.name)])
                done(.ended)
            case .failed(.refused(let why)):
                self.log.warning(
                    "userinfo after a refresh was refused; the session ends",
                    metadata: ["client": .string(client.name), "error": .string(why)])
                done(.ended)
            case .failed(.unreachable(let why)):
                if let since = previous.userinfoStaleSince {
                    self.log.warning(
                        "userinfo unreachable again after a refresh; the session's claims are stale, the session ends",
                        metadata: [
                            "client": .string(client.name), "error": .string(why),
                            "stale_since": .stringConvertible(since)
                        ])
                    done(.ended)
                    return
                }
                self.log.warning(
                    "userinfo after a refresh unreachable; the session keeps its claims until the next refresh",
                    metadata: ["client": .string(client.name), "error": .string(why)])
                for name in previous.claims.names where session.claims[name] == nil {
                    session.claims[name] = previous.claims[name]
                }
                session.userinfoStaleSince = self.wallClock.seconds
                done(.refreshed(session))
            }
        }
    }
}
