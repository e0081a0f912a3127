import Foundation
import JOSE
import OAuth

/// A worker's identity assertions (route option `identity_assertion`): short-lived JWTs
/// (RFC 7519) signed with the gateway's first `identity_assertion_keys` key, telling an
/// upstream who the caller is in a form it can verify against the gateway's JWKS — so an
/// upstream that other paths can reach too can tell a request that came through the gateway.
/// Cached per caller (session, or token) per route until a quarter of the lifetime is left:
/// one signature per minute per caller, not one per request. Loop-thread only.
final class IdentityAssertions {
    private struct Entry {
        let jwt: String
        let expiresAt: Int64
        /// The claims it was made from: a refresh that changed them (a group removed) makes a new one.
        let claims: JSONObject
    }

    /// Bounds the cache: past it, expired entries go, and if that is not enough, all.
    static let maxEntries = 10_000
    private var cache: [String: Entry] = [:]
    private var signer: AssertionKey?
    /// Signatures made (for tests and the benchmark's story: one per caller per lifetime).
    private(set) var signatures = 0

    /// A new config may rotate the key: nothing signed with the old config is reused.
    func apply(_ config: GatewayConfig) {
        signer = config.assertionKeys.first
        cache.removeAll()
    }

    /// The route's assertion header for this caller; nil when the route has none (or, which
    /// the config check prevents, no key). `caller` names the session or token it is cached for;
    /// `notAfter`: the credential's own expiry, which the assertion never outlives. `idp`: the
    /// issuer (its `iss` URL) that vouched for the caller; `client`: the login client of a session.
    func header(
        _ route: RouteConfig, caller: String, claims: JSONObject, now: Int64, notAfter: Int64? = nil,
        idp: String? = nil, client: String? = nil
    ) -> (String, String)? {
        guard let config = route.options.forwarding.identityAssertion, let signer else { return nil }
        let key = "\(route.index) \(caller)"
        // Reused while more than a quarter of its lifetime is left — or, when it already ends
        // with the credential, while it lasts (a new one could not last longer).
        if let e = cache[key], e.claims == claims,
            e.expiresAt - now > Int64(config.lifetime / 4) || (e.expiresAt > now && e.expiresAt == notAfter)
        {
            return (config.header, e.jwt)
        }
        let exp = min(now + Int64(config.lifetime), notAfter ?? .max)
        var body = JSONObject()
        body["iss"] = .string(config.issuer)
        body["aud"] = .string(config.audience)
        // sub, email, groups, and every claim the route's identity headers map.
        var names = ["sub", "email", "groups"]
        for entry in route.options.forwarding.identityHeaders.mapping {
            if let first = entry.path.components.first, !names.contains(first) { names.append(first) }
        }
        for name in names where !Self.registered.contains(name) {
            if let v = claims[name] { body[name] = v }
        }
        // Who vouched: on a route with several IdPs, sub and groups alone are only unique per IdP.
        if let idp { body["idp"] = .string(idp) }
        if let client { body["client"] = .string(client) }
        body["iat"] = .number(String(now))
        body["exp"] = .number(String(exp))
        body["jti"] = .string(Base64URL.encode(SecureRandom.bytes(16)))
        // RFC 8725 §3.11: an explicit type, so it cannot pass for another kind of JWT.
        var header = JSONObject()
        header["typ"] = .string("tokengate-assertion+jwt")
        guard let jwt = try? JWSSigner.sign(claims: body, header: header, alg: signer.alg, key: signer.key) else {
            return nil
        }
        signatures += 1
        if cache.count >= Self.maxEntries {
            cache = cache.filter { $0.value.expiresAt > now }
            if cache.count >= Self.maxEntries { cache.removeAll() }
        }
        cache[key] = Entry(jwt: jwt, expiresAt: exp, claims: claims)
        return (config.header, jwt)
    }

    /// Claims the gateway sets itself: a mapped claim of the same name never replaces them.
    static let registered: Set<String> = ["iss", "aud", "iat", "exp", "nbf", "jti", "idp", "client"]
}
