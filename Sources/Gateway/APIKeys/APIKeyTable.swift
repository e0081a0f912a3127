import JOSE

/// One key set's keys, by digest: what a request's key is checked against. Built once per
/// load of the file; a request hashes the key it presents once and looks the digest up once,
/// so a set of 10,000 keys costs what a set of one does.
public struct APIKeyTable: Sendable {
    private let byDigest: [APIKeyDigest: Int]
    public let entries: [APIKeyEntry]

    public init(_ entries: [APIKeyEntry]) {
        self.entries = entries
        var index: [APIKeyDigest: Int] = [:]
        index.reserveCapacity(entries.count)
        for (i, e) in entries.enumerated() { index[e.digest] = index[e.digest] ?? i }
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
