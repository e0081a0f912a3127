public import JOSE

/// A dotted path into a claims set (`realm_access.roles`, `address.country`), as routes
/// name claims for requirements and identity headers.
public struct ClaimPath: Sendable, Hashable, CustomStringConvertible {
    public let components: [String]
    /// `components`, prepared for lookups once (a route's paths are read on every request).
    private let names: [JSONObject.Name]

    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        components = parts
        names = parts.map(JSONObject.Name.init)
    }

    /// A path from its names as they are (a name may hold dots: `resource_access` keyed by a
    /// client id that is a URL).
    public init?(components parts: [String]) {
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        components = parts
        names = parts.map(JSONObject.Name.init)
    }

    public static func == (a: ClaimPath, b: ClaimPath) -> Bool { a.components == b.components }
    public func hash(into hasher: inout Hasher) { hasher.combine(components) }

    public var description: String { components.joined(separator: ".") }

    /// The value at this path, or nil when any step is missing or not an object.
    public func value(in claims: JSONObject) -> JSONValue? {
        guard var current = claims[names[0]] else { return nil }
        for name in names.dropFirst() {
            guard case .object(let o) = current, let next = o[name] else { return nil }
            current = next
        }
        return current
    }
}
