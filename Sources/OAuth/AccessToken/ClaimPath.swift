public import JOSE

/// A dotted path into a claims set (`realm_access.roles`, `address.country`), as routes
/// name claims for requirements and identity headers.
public struct ClaimPath: Sendable, Hashable, CustomStringConvertible {
    public let components: [String]

    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        components = parts
    }

    public var description: String { components.joined(separator: ".") }

    /// The value at this path, or nil when any step is missing or not an object.
    public func value(in claims: JSONObject) -> JSONValue? {
        var current: JSONValue = .object(claims)
        for c in components {
            guard case .object(let o) = current, let next = o[c] else { return nil }
            current = next
        }
        return current
    }
}
