import Foundation
import JOSE
import Reactor

/// Aggregated and distributed claims (OIDC Core §5.6.2) at login, and again when a refresh
/// brings a new ID token: each claim a session keeps that `_claim_names` points elsewhere is
/// had from its source once, and kept in the session with it — requests never call a source.
/// An endpoint is called only when it is on the issuer's `claim_sources`; an inline JWT only
/// counts when the issuer's keys verify it (`iss` the issuer's). Whatever cannot be had stays
/// absent, is logged, and is recorded in the session (`DistributedClaims.record`), so a
/// route's `require` on it refuses with the reason rather than silently.
extension ClaimsSources {
    /// What a resolution has so far.
    struct DistributedResolution {
        var claims: JSONObject
        var resolved: [String] = []
        var failures: [DistributedClaims.Failure] = []
        var keptBytes = 0
    }

    /// `claims` with the claims their sources gave merged in, and the record; `claims` as they
    /// are when they name no source for a claim the session keeps.
    func resolveDistributedClaims(
        _ claims: JSONObject, accessToken: String?, for asking: Client, done: @escaping (JSONObject) -> Void
    ) {
        // The record is the gateway's own: none the AS sent is taken.
        var claims = claims
        claims[DistributedClaims.record] = nil
        let (sources, failures) = DistributedClaims.sources(claims, wanted: Self.sourced(kept))
        guard !sources.isEmpty || !failures.isEmpty else {
            done(claims)
            return
        }
        var state = DistributedResolution(claims: claims)
        state.failures = failures
        follow(sources[...], state, accessToken: accessToken, for: asking) { state in
            var out = state.claims
            for f in state.failures {
                self.log.warning(
                    "distributed claims could not be had; a route that requires them refuses",
                    metadata: [
                        "client": .string(asking.client.name), "claims": .string(f.claims.joined(separator: ",")),
                        "reason": .string(f.reason)
                    ])
            }
            out[DistributedClaims.record] = DistributedClaims.record(
                resolved: state.resolved, failures: state.failures, at: self.wallClock.seconds)
            done(out)
        }
    }

    /// The kept claims a source may supply: none of `DistributedClaims.opOnly`.
    static func sourced(_ kept: Set<String>) -> Set<String> { kept.subtracting(DistributedClaims.opOnly) }

    /// Asks the sources one after the other (there are at most `DistributedClaims.maxSources`).
    private func follow(
        _ sources: ArraySlice<DistributedClaims.Source>, _ state: DistributedResolution, accessToken: String?,
        for asking: Client, done: @escaping (DistributedResolution) -> Void
    ) {
        let issuer = asking.issuer
        guard let source = sources.first else {
            done(state)
            return
        }
        let rest = sources.dropFirst()
        let next = { (state: DistributedResolution) in
            self.follow(rest, state, accessToken: accessToken, for: asking, done: done)
        }
        let verify = { (jwt: String) throws -> JSONObject in
            guard let keys = self.keys[issuer: issuer.name] else {
                throw DistributedClaimsError("the keys of \(issuer.name) are not loaded")
            }
            var policy = JWTClaimsPolicy(issuer: issuer.issuer, leeway: Int64(issuer.leeway))
            // §5.6.2's aggregated claims JWT need not expire; one that says exp is held to it.
            policy.requireExpiry = false
            let verifier = JWTVerifier(
                keys: keys, algorithms: issuer.algorithms, policy: policy, maxSize: DistributedClaims.maxAnswerBytes)
            return try verifier.verify(jwt, now: self.wallClock.seconds).claims
        }
        switch source.kind {
        case .jwt(let jwt):
            let answer = DistributedClaims.claims(
                fromAnswer: Array(jwt.utf8), contentType: "application/jwt", names: source.claims, verify: verify)
            next(Self.take(answer, source, into: state))
        case .endpoint(let endpoint, let ownToken):
            guard DistributedClaims.allowed(endpoint, by: issuer.claimSources) else {
                var state = state
                state.failures.append(
                    .init(
                        claims: source.claims,
                        reason:
                            "source \(source.name) (\(endpoint)) is not on issuers.\(issuer.name).claim_sources; not called"
                    ))
                next(state)
                return
            }
            guard let bearer = ownToken ?? accessToken else {
                var state = state
                state.failures.append(
                    .init(claims: source.claims, reason: "no access token to call source \(source.name) with"))
                next(state)
                return
            }
            let request = FetchRequest(
                url: endpoint,
                headers: ["Accept: application/jwt, application/json", "Authorization: Bearer " + bearer],
                bound: CallBounds.userinfo, maxResponseBytes: DistributedClaims.maxAnswerBytes)
            server.fetcher(asking.target).fetch(request) { result in
                var state = state
                switch result {
                case .failure(let e):
                    state.failures.append(
                        .init(
                            claims: source.claims, reason: "source \(source.name) could not be asked: \(e.description)")
                    )
                    next(state)
                case .success(let resp) where resp.status != 200:
                    state.failures.append(
                        .init(claims: source.claims, reason: "source \(source.name) answered \(resp.status)"))
                    next(state)
                case .success(let resp):
                    let answer = DistributedClaims.claims(
                        fromAnswer: resp.body, contentType: resp.header("content-type"), names: source.claims,
                        verify: verify)
                    next(Self.take(answer, source, into: state))
                }
            }
        }
    }

    /// A source's answer into the resolution, within `DistributedClaims.maxKeptBytes`.
    static func take(
        _ answer: Result<JSONObject, DistributedClaims.Failure>, _ source: DistributedClaims.Source,
        into state: DistributedResolution
    ) -> DistributedResolution {
        var state = state
        switch answer {
        case .failure(var f):
            f.reason = "source \(source.name): \(f.reason)"
            state.failures.append(f)
        case .success(let got):
            let bytes = JSONSerializer.serialize(.object(got)).utf8.count
            guard state.keptBytes + bytes <= DistributedClaims.maxKeptBytes else {
                state.failures.append(
                    .init(
                        claims: source.claims,
                        reason:
                            "source \(source.name): its claims take \(bytes) bytes (at most \(DistributedClaims.maxKeptBytes) in all)"
                    ))
                return state
            }
            state.keptBytes += bytes
            for name in got.names {
                state.claims[name] = got[name]
                state.resolved.append(name)
            }
        }
        return state
    }
}

/// Why a source's JWT could not be checked.
struct DistributedClaimsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
