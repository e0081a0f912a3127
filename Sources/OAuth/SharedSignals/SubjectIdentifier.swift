public import JOSE

/// A Subject Identifier (RFC 9493): who or what a security event is about. The formats a
/// receiver can match to a token or a session are read into their own cases; every other
/// registered format (`account`, `did`, `phone_number`, `uri`) is kept by name only, so an
/// event about it is understood and matches nothing. A complex subject (SSF 1.0 §3.2) names a
/// user and, to narrow the event, one of the user's sessions.
public indirect enum SubjectIdentifier: Sendable, Equatable {
    /// `email` (RFC 9493 §3.2.2): a token's or session's `email`.
    case email(String)
    /// `iss_sub` (§3.2.3): an issuer's `sub`.
    case issSub(iss: String, sub: String)
    /// `opaque` (§3.2.4): a `sub` (or, in a complex subject's `session`, a session id).
    case opaque(String)
    /// `aliases` (§3.2.7): several identifiers of one subject.
    case aliases([SubjectIdentifier])
    /// SSF 1.0 §3.2: a user, and the session the event is narrowed to.
    case complex(user: SubjectIdentifier?, session: SubjectIdentifier?)
    /// A format a gateway has nothing to match with (`account`, `did`, `phone_number`, `uri`).
    case other(format: String)

    /// Reads a subject; `nested`: inside `aliases` or a complex member, where neither may
    /// appear again (RFC 9493 §3.2.7: no aliases inside aliases).
    public init(_ object: JSONObject, nested: Bool = false) throws(SubjectIdentifierError) {
        // Google's RISC names the format `subject_type` and spells it with a hyphen.
        guard let format = object["format"]?.string ?? object["subject_type"]?.string?.replacing("-", with: "_")
        else {
            // SSF 1.0 §3.2: a complex subject may leave its format out, naming its members.
            if !nested, object["user"] != nil || object["session"] != nil {
                self = try Self.complex(object)
                return
            }
            throw SubjectIdentifierError("a subject needs a format")
        }
        func member(_ name: String) throws(SubjectIdentifierError) -> String {
            guard let s = object[name]?.string, !s.isEmpty else {
                throw SubjectIdentifierError("a subject of format \(format) needs \(name) as a string")
            }
            return s
        }
        switch format {
        case "email": self = .email(try member("email"))
        case "iss_sub": self = .issSub(iss: try member("iss"), sub: try member("sub"))
        case "opaque": self = .opaque(try member("id"))
        case "aliases":
            guard !nested else { throw SubjectIdentifierError("aliases cannot hold aliases") }
            guard let items = object["identifiers"]?.array, !items.isEmpty, items.count <= 32 else {
                throw SubjectIdentifierError("aliases need 1 to 32 identifiers")
            }
            var all: [SubjectIdentifier] = []
            for item in items {
                guard let o = item.object else { throw SubjectIdentifierError("an alias must be an object") }
                all.append(try SubjectIdentifier(o, nested: true))
            }
            self = .aliases(all)
        case "complex":
            guard !nested else { throw SubjectIdentifierError("a complex subject cannot be nested") }
            self = try Self.complex(object)
        case "account", "did", "phone_number", "uri", "jwt_id", "saml_assertion_id":
            self = .other(format: format)
        default:
            throw SubjectIdentifierError("unknown subject format \(String(format.prefix(64)))")
        }
    }

    private static func complex(_ object: JSONObject) throws(SubjectIdentifierError) -> SubjectIdentifier {
        func part(_ name: String) throws(SubjectIdentifierError) -> SubjectIdentifier? {
            guard let v = object[name] else { return nil }
            guard let o = v.object else {
                throw SubjectIdentifierError("a complex subject's \(name) must be an object")
            }
            return try SubjectIdentifier(o, nested: true)
        }
        let user = try part("user")
        let session = try part("session")
        guard user != nil || session != nil else {
            throw SubjectIdentifierError("a complex subject needs a user or a session")
        }
        return .complex(user: user, session: session)
    }
}

/// Why a subject was refused: for the log and RFC 8935's `description`, never quoting it.
public struct SubjectIdentifierError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
