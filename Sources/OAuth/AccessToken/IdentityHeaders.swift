public import JOSE

/// Maps claims to the identity headers the upstream trusts: strings as they are, numbers
/// and booleans as their JSON text, arrays of scalars joined with ",", objects (and arrays
/// holding objects) as compact JSON. A value with any byte a field value may not hold (RFC
/// 9110 §5.5: only field-vchar, obs-text, SP and HTAB) is dropped whole — CR, LF and NUL
/// would split or end a header, DEL and the other controls are read differently by each
/// upstream. Defaults follow oauth2-proxy's names so migrations keep working.
///
/// A mapping may also name a variable of the route's path template (`X-Order-Id: "{order_id}"`):
/// those headers come from the request, not the caller, so they are kept apart (`parameters`)
/// and never cached with the claims' headers.
public struct IdentityHeaders: Sendable, Equatable {
    public var mapping: [(header: String, path: ClaimPath)]
    /// Headers set from the route's path-template variables: (header, variable name).
    public var parameters: [(header: String, name: String)] = []

    public static let defaults: [(String, String)] = [
        ("X-Forwarded-User", "sub"), ("X-Forwarded-Email", "email"),
        ("X-Forwarded-Groups", "groups"), ("X-Forwarded-Preferred-Username", "preferred_username")
    ]

    public init(mapping: [(header: String, path: ClaimPath)], parameters: [(header: String, name: String)] = []) {
        self.mapping = mapping
        self.parameters = parameters
    }

    /// One value for every route that keeps the defaults, so they share its storage.
    public static let standard = IdentityHeaders(mapping: defaults.map { ($0.0, ClaimPath($0.1)!) })

    public static func == (a: Self, b: Self) -> Bool {
        a.mapping.count == b.mapping.count
            && zip(a.mapping, b.mapping).allSatisfy { $0.header == $1.header && $0.path == $1.path }
            && a.parameters.count == b.parameters.count
            && zip(a.parameters, b.parameters).allSatisfy { $0.header == $1.header && $0.name == $1.name }
    }

    /// Header names to strip from every client request (the gateway's to set).
    public var headerNames: [String] { mapping.map(\.header) + parameters.map(\.header) }

    /// (header, value) pairs for the path-template variables `value(name)` knows; a variable it
    /// does not know gives no header. The values are a normalized path's segments (pchars and
    /// `%XX`), valid field values by construction; one that is not is dropped all the same.
    public func values(forParameters value: (String) -> String?) -> [(String, String)] {
        var out: [(String, String)] = []
        for entry in parameters {
            guard let v = value(entry.name), Self.isFieldValue(v) else { continue }
            out.append((entry.header, v))
        }
        return out
    }

    /// (header, value) pairs for these claims; absent claims give no header. `omitted` hears
    /// the name of each header left out because its claim's value cannot be a field value
    /// (so the caller can log why the upstream did not get it).
    public func values(for claims: JSONObject, omitted: ((String) -> Void)? = nil) -> [(String, String)] {
        var out: [(String, String)] = []
        out.reserveCapacity(mapping.count)
        for entry in mapping {
            guard let v = entry.path.value(in: claims), let text = Self.render(v) else { continue }
            guard Self.isFieldValue(text) else {
                omitted?(entry.header)
                continue
            }
            out.append((entry.header, text))
        }
        return out
    }

    /// RFC 9110 §5.5: field-vchar (VCHAR, obs-text), SP and HTAB — nothing else.
    public static func isFieldValue(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.allSatisfy { ($0 >= 0x20 && $0 != 0x7f) || $0 == 0x09 } }
    }

    static func render(_ v: JSONValue) -> String? {
        switch v {
        case .null: return nil
        case .string(let s): return s
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        case .object: return JSONSerializer.serialize(v)
        case .array(let a):
            if a.allSatisfy({
                if case .object = $0 { return false }
                if case .array = $0 { return false }
                return true
            }) {
                return a.compactMap(render).joined(separator: ",")
            }
            return JSONSerializer.serialize(v)
        }
    }
}
