public import JOSE

/// What `tokengate api-keys` does to a key file's entries: create, revoke and rotate keys.
/// The command reads and writes the file; this decides the entries, so that the rules (ids
/// unique, a rotated key's identity kept) are the ones the gateway's reader checks.
public enum APIKeyEditing {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The identity a new key carries.
    public struct Identity {
        public var sub: String
        public var clientID: String?
        public var scopes: [String]
        public var claims: [(String, JSONValue)]

        public init(sub: String, clientID: String? = nil, scopes: [String] = [], claims: [(String, JSONValue)] = []) {
            self.sub = sub
            self.clientID = clientID
            self.scopes = scopes
            self.claims = claims
        }
    }

    /// A new key for `identity`, and the entries with its entry added. The key is returned
    /// once: the entries hold only its digest.
    public static func create(
        _ identity: Identity, id: String? = nil, expires: Int64? = nil, notBefore: Int64? = nil,
        in entries: [APIKeyEntry]
    ) throws(Failure) -> (key: String, entries: [APIKeyEntry]) {
        let id = id ?? freshID(entries)
        guard APIKeyEntry.isValidID(id) else { throw Failure(description: "an id is 1 to 64 of A-Z a-z 0-9 _ -") }
        guard !entries.contains(where: { $0.id == id }) else { throw Failure(description: "id \(id) is taken") }
        guard !identity.sub.isEmpty else { throw Failure(description: "a key needs a sub") }
        if let bad = identity.scopes.first(where: { !APIKeyEntry.isScopeToken($0) }) {
            throw Failure(description: "scope \"\(bad)\" is not a scope-token (RFC 6749 §3.3)")
        }
        if let expires, let notBefore, expires <= notBefore {
            throw Failure(description: "the key would expire before it becomes valid")
        }
        let key = APIKey.generate()
        let entry = APIKeyEntry(
            id: id, digest: key.digest, sub: identity.sub, clientID: identity.clientID, scopes: identity.scopes,
            claims: identity.claims, expires: expires, notBefore: notBefore)
        return (key.text, entries + [entry])
    }

    /// The entries without `id`'s: its key fails from the file's next load on.
    public static func revoke(_ id: String, in entries: [APIKeyEntry]) throws(Failure) -> [APIKeyEntry] {
        guard entries.contains(where: { $0.id == id }) else { throw Failure(description: "no key has the id \(id)") }
        return entries.filter { $0.id != id }
    }

    /// A new key with `id`'s identity, scopes and claims, beside the old one, which now
    /// expires at `oldExpires` (the overlap's end, if it expired later or never).
    public static func rotate(
        _ id: String, oldExpires: Int64, newExpires: Int64? = nil, in entries: [APIKeyEntry]
    ) throws(Failure) -> (key: String, id: String, entries: [APIKeyEntry]) {
        guard let i = entries.firstIndex(where: { $0.id == id }) else {
            throw Failure(description: "no key has the id \(id)")
        }
        var entries = entries
        let old = entries[i]
        entries[i].expires = min(old.expires ?? oldExpires, oldExpires)
        let identity = Identity(sub: old.sub, clientID: old.clientID, scopes: old.scopes, claims: old.claims)
        let newID = freshID(entries)
        let made = try create(identity, id: newID, expires: newExpires, in: entries)
        return (made.key, newID, made.entries)
    }

    private static func freshID(_ entries: [APIKeyEntry]) -> String {
        while true {
            let id = APIKeyEntry.newID()
            if !entries.contains(where: { $0.id == id }) { return id }
        }
    }
}
