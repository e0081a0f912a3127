/// The protected header of a compact JWS, checked as RFC 7515 §4 and RFC 8725 require.
public struct JWSHeader: Sendable {
    public let object: JSONObject
    public let alg: JWSAlgorithm
    /// Read once here: key selection and the claims policy ask for them on every token.
    public let kid: String?
    public let typ: String?
    /// RFC 7515 §4.1.10: the payload's media type; "JWT" marks a nested JWT (RFC 7519 §5.2).
    public let cty: String?

    /// Header parameters tokengate understands and so may appear in `crit` — none: it
    /// refuses every extension that must be understood (RFC 7515 §4.1.11).
    static let understoodCritical: Set<String> = []

    /// The header parameters read on every token, prepared for lookups once.
    private enum Names {
        static let alg = JSONObject.Name("alg")
        static let crit = JSONObject.Name("crit")
        static let b64 = JSONObject.Name("b64")
        static let kid = JSONObject.Name("kid")
        static let typ = JSONObject.Name("typ")
        static let cty = JSONObject.Name("cty")
    }

    init(object: JSONObject) throws {
        guard let algValue = object[Names.alg] else {
            throw JOSEError(.malformed, claim: "alg", "the header has no alg")
        }
        guard let name = algValue.string else { throw JOSEError(.malformed, claim: "alg", "must be a string") }
        guard let alg = JWSAlgorithm(rawValue: name) else {
            throw JOSEError(.algorithmNotAllowed, claim: "alg", "\"\(name)\" is not a supported algorithm")
        }
        if let crit = object[Names.crit] {
            guard let names = crit.array, !names.isEmpty, names.allSatisfy({ $0.string != nil }) else {
                throw JOSEError(.malformed, claim: "crit", "must be a non-empty array of names")
            }
            for n in names.compactMap(\.string) where !JWSHeader.understoodCritical.contains(n) {
                throw JOSEError(.unsupportedCritical, claim: "crit", "extension \"\(n)\" is not supported")
            }
        }
        // RFC 7797: an unencoded payload changes what is signed; refused outright.
        if let b64 = object[Names.b64], b64 != .bool(true) {
            throw JOSEError(.unsupportedCritical, claim: "b64", "unencoded payloads are not supported")
        }
        func requireString(_ name: JSONObject.Name) throws -> String? {
            guard let v = object[name] else { return nil }
            guard case .string(let s) = v else { throw JOSEError(.malformed, claim: name.text, "must be a string") }
            return s
        }
        kid = try requireString(Names.kid)
        typ = try requireString(Names.typ)
        cty = try requireString(Names.cty)
        self.object = object
        self.alg = alg
    }

    /// RFC 7515 §4.1.9: media types compare case-insensitively, and "application/" may be
    /// left out when no other "/" appears.
    public static func typesMatch(_ a: String, _ b: String) -> Bool {
        if a == b { return true }
        func norm(_ s: String) -> String {
            let l = s.lowercased()
            return l.hasPrefix("application/") && l.dropFirst(12).contains("/") == false ? String(l.dropFirst(12)) : l
        }
        return norm(a) == norm(b)
    }
}
