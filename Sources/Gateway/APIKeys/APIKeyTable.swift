import JOSE

/// One key set's keys, by digest: what a request's key is checked against. Built once per
/// load of the file; a request hashes the key it presents once and looks the digest up once,
/// so a set of 10,000 keys costs what a set of one does.
public struct APIKeyTable: Sendable {
    private let byDigest: [APIKeyDigest: Int]
    public let entries: [APIKeyEntry]

    /// `set`: the set's name, in the claims its callers are admitted with.
    public init(_ entries: [APIKeyEntry], set: String = "") {
        self.entries = entries.map { e in
            var e = e
            e.admittedClaims = e.tokenClaims(set: set)
            return e
        }
        var index: [APIKeyDigest: Int] = [:]
        index.reserveCapacity(entries.count)
        for (i, e) in self.entries.enumerated() { index[e.digest] = index[e.digest] ?? i }
        byDigest = index
    }

    /// What a presented key comes to.
    public enum Outcome: Equatable {
        case valid(APIKeyEntry)
        /// Not a key at all (its check digits or its shape): refused before any lookup.
        case malformed(String)
        /// A well-formed key this set does not hold (never issued, or revoked).
        case unknown
        case expired(APIKeyEntry)
        case notYetValid(APIKeyEntry)

        /// The `outcome` label of `tokengate_api_key_auth_total`.
        public var label: String {
            switch self {
            case .valid: "ok"
            case .malformed: "malformed"
            case .unknown: "unknown"
            case .expired: "expired"
            case .notYetValid: "not_yet_valid"
            }
        }
    }

    /// The key in `presented` at `now` (Unix seconds). `expires` has no leeway: a key fails
    /// from that second on; `not_before` lets it pass from that second on.
    public func check(_ presented: some Collection<UInt8>, now: Double) -> Outcome {
        let key: APIKey
        switch APIKey.parse(presented) {
        case .success(let k): key = k
        case .failure(let why): return .malformed(why.description)
        }
        guard let i = byDigest[key.digest] else { return .unknown }
        let entry = entries[i]
        if let expires = entry.expires, now >= Double(expires) { return .expired(entry) }
        if let notBefore = entry.notBefore, now < Double(notBefore) { return .notYetValid(entry) }
        return .valid(entry)
    }
}

extension APIKeyEntry {
    /// The claims a key's entry gives its caller, as a token's would: `sub`, `client_id`,
    /// `scope` (space-separated, RFC 8693 §4.2), the entry's others, and an `iss` that names
    /// the set (so a policy or cache tells two sets' callers with one `sub` apart).
    func tokenClaims(set: String) -> JSONObject {
        var claims = JSONObject()
        for (name, value) in self.claims { claims[name] = value }
        claims["iss"] = .string("urn:tokengate:api-keys:\(set)")
        claims["sub"] = .string(sub)
        if let clientID { claims["client_id"] = .string(clientID) }
        if !scopes.isEmpty { claims["scope"] = .string(scopes.joined(separator: " ")) }
        return claims
    }
}
