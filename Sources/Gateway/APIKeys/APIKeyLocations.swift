import Reactor

/// Where a route's keys come, per set: a field of its own (`X-API-Key`) or the Authorization
/// field with a scheme of its own (`Authorization: ApiKey <key>`). Never the query or a body:
/// a key in a URL ends up in logs and histories. Made at config load from the sets the route
/// names; sets that read the same place are tried in turn.
struct APIKeyLocations: Sendable {
    struct Location: Sendable {
        /// Lowercase; nil when the key comes in Authorization.
        var field: String?
        /// The Authorization scheme as configured (compared without case); nil when the key
        /// has a field of its own.
        var scheme: String?
        /// The sets that read this place, in the route's order.
        var sets: [String]
    }

    private(set) var locations: [Location] = []

    init(sets names: [String], _ sets: [String: APIKeySetConfig]) {
        for name in names {
            guard let set = sets[name] else { continue }
            let field = set.header?.lowercased()
            let scheme = set.scheme
            if let i = locations.firstIndex(where: {
                $0.field == field && $0.scheme?.lowercased() == scheme?.lowercased()
            }) {
                locations[i].sets.append(name)
            } else {
                locations.append(Location(field: field, scheme: scheme, sets: [name]))
            }
        }
    }

    var isEmpty: Bool { locations.isEmpty }

    /// The fields keys come in (lowercase bytes): removed before forwarding, whoever the
    /// caller and whatever it sent in them.
    var fields: [[UInt8]] { locations.compactMap(\.field).map { Array($0.utf8) } }

    /// The scheme a keys-only route's challenge names: its first Authorization scheme, else
    /// `ApiKey`.
    var challengeScheme: String { locations.first(where: { $0.scheme != nil })?.scheme ?? "ApiKey" }

    enum Presented: Equatable {
        case none
        /// A key, the sets to try it in, and whether it came in Authorization.
        case key([UInt8], sets: [String], inAuthorization: Bool)
        /// More than one key, or a key field twice: refused, not guessed at.
        case ambiguous(String)
    }

    /// The key the request carries, if any.
    func presented(_ fields: HTTP1Fields) -> Presented {
        var found: Presented = .none
        for location in locations {
            var values: [[UInt8]] = []
            if let field = location.field {
                fields.forEachValue(named: field) { values.append(Self.trimmed($0)) }
            } else if let scheme = location.scheme {
                fields.forEachValue(named: "Authorization") { value in
                    if let key = Self.credential(value, scheme: scheme) { values.append(key) }
                }
            }
            guard !values.isEmpty else { continue }
            guard values.count == 1, found == .none else {
                return .ambiguous("more than one API key")
            }
            found = .key(values[0], sets: location.sets, inAuthorization: location.field == nil)
        }
        return found
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }

    private static func trimmed(_ value: Span<UInt8>) -> [UInt8] {
        var start = 0
        var end = value.count
        while start < end, isSpace(value[start]) { start += 1 }
        while end > start, isSpace(value[end - 1]) { end -= 1 }
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        for i in start..<end { out.append(value[i]) }
        return out
    }

    /// `<scheme> 1*SP <credential>` (RFC 9110 §11.4), the scheme compared without case; nil
    /// for another scheme.
    private static func credential(_ value: Span<UInt8>, scheme: String) -> [UInt8]? {
        let field = trimmed(value)
        let name = Array(scheme.lowercased().utf8)
        guard field.count > name.count, isSpace(field[name.count]) else { return nil }
        for i in name.indices where HTTP1Fields.lower(field[i]) != name[i] { return nil }
        var start = name.count
        while start < field.count, isSpace(field[start]) { start += 1 }
        return Array(field[start...])
    }
}
