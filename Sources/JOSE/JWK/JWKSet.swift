/// A JWK Set (RFC 7517 §5) and strict key selection: every criterion that is known — kid,
/// alg, kty/crv, `use`, `key_ops` — must fit, and exactly one key may fit. No fallback to a
/// "default" key; a header's `jwk`/`jku`/`x5u`/`x5c` is never consulted.
public struct JWKSet: Sendable {
    public let keys: [JWK]
    /// Members of `keys` that could not be used (unsupported type, weak, invalid), with
    /// why; they are left out rather than failing the whole set an IdP published.
    public let skipped: [(index: Int, error: JOSEError)]

    public init(keys: [JWK]) {
        self.keys = keys
        self.skipped = []
        var seen = Set<String>()
        var duplicated = Set<String>()
        for k in keys { if let kid = k.kid, !seen.insert(kid).inserted { duplicated.insert(kid) } }
        duplicateKids = duplicated
    }

    public init(json: String) throws {
        try self.init(bytes: Array(json.utf8))
    }

    public init(bytes: [UInt8]) throws {
        try self.init(object: try JSONParser.parseObject(bytes, what: "a JWK Set"))
    }

    /// A set already parsed: one member of a larger document (a registry of clients' sets).
    public init(object obj: JSONObject) throws {
        guard let arr = obj["keys"]?.array else {
            throw JOSEError(.malformed, claim: "keys", "a JWK Set needs a keys array")
        }
        var keys: [JWK] = []
        var skipped: [(Int, JOSEError)] = []
        for (i, v) in arr.enumerated() {
            do {
                guard let o = v.object else { throw JOSEError(.invalidKey, "not a JSON object") }
                keys.append(try JWK(object: o))
            } catch let e as JOSEError {
                skipped.append((i, e))
            }
        }
        // A set that holds both secret and public keys means a secret was published next
        // to public keys, or a public key could be confused for a secret: refused whole.
        if keys.contains(where: { $0.kty == "oct" }) && keys.contains(where: { $0.kty != "oct" }) {
            throw JOSEError(.invalidKey, claim: "keys", "the set mixes symmetric and asymmetric keys")
        }
        self.keys = keys
        self.skipped = skipped
        // Counted over every member, usable or not: a kid that names two keys names none.
        var seen = Set<String>()
        var duplicated = Set<String>()
        for v in arr { if let kid = v.object?["kid"]?.string, !seen.insert(kid).inserted { duplicated.insert(kid) } }
        duplicateKids = duplicated
    }

    /// kids that more than one member of the set carries.
    let duplicateKids: Set<String>

    /// Whether more than one member carries `kid` (RFC 7517 §4.5: such a kid names no key).
    public func isShared(kid: String) -> Bool { !duplicateKids.isEmpty && duplicateKids.contains(kid) }

    /// The one member whose `kid` is `kid`; nil when none is, or several are (`isShared`).
    public func key(kid: String) -> JWK? {
        if isShared(kid: kid) { return nil }
        for key in keys where key.kid == kid { return key }
        return nil
    }

    /// The one key that fits a JWS with this `alg` and `kid`.
    public func key(for alg: JWSAlgorithm, kid: String?) throws -> JWK {
        // RFC 7517 §4.5: kids distinguish keys; a kid that names two keys names none.
        if let kid, !duplicateKids.isEmpty, duplicateKids.contains(kid) {
            throw JOSEError(.ambiguousKey, claim: "kid", "several keys have kid \"\(kid)\"; refusing to guess")
        }
        var found: JWK?
        var count = 0
        for key in keys {
            if let kid, key.kid != kid { continue }
            guard (try? key.checkUsable(for: alg)) != nil else { continue }
            if !duplicateKids.isEmpty, let k = key.kid, duplicateKids.contains(k) {
                throw JOSEError(.ambiguousKey, claim: "kid", "several keys have kid \"\(k)\"; refusing to guess")
            }
            found = key
            count += 1
        }
        guard let found else {
            if let kid, let named = keys.first(where: { $0.kid == kid }) {
                // Name the reason the kid's key does not fit (type, size, use…).
                do { try named.checkUsable(for: alg) } catch let e as JOSEError { throw e }
            }
            throw JOSEError(
                .keyNotFound, claim: "kid",
                kid.map { "no usable \(alg) key with kid \"\($0)\"" } ?? "no usable \(alg) key")
        }
        guard count == 1 else {
            throw JOSEError(
                .ambiguousKey, claim: "kid",
                "\(count) keys fit \(alg)\(kid.map { " with kid \"\($0)\"" } ?? ""); refusing to guess")
        }
        return found
    }

    /// The public keys as a JWK Set document (for `/.well-known/jwks.json`).
    public func publicJSON() -> String {
        JSONSerializer.serialize(.object(JSONObject(["keys": .array(keys.map { .object($0.publicJWK()) })])))
    }
}
