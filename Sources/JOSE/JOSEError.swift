/// Every JOSE failure: a stable `code` to branch on and map to wire errors, the claim or
/// member concerned, and a reason for logs. Reasons never contain key material.
public struct JOSEError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let malformed = Code(rawValue: "malformed")
        public static let tooLarge = Code(rawValue: "too_large")
        public static let duplicateMember = Code(rawValue: "duplicate_member")
        public static let unsupportedCritical = Code(rawValue: "unsupported_critical")
        public static let algorithmNotAllowed = Code(rawValue: "algorithm_not_allowed")
        public static let keyNotFound = Code(rawValue: "key_not_found")
        public static let ambiguousKey = Code(rawValue: "ambiguous_key")
        public static let invalidKey = Code(rawValue: "invalid_key")
        public static let weakKey = Code(rawValue: "weak_key")
        public static let keyMismatch = Code(rawValue: "key_mismatch")
        public static let badSignature = Code(rawValue: "bad_signature")
        public static let expired = Code(rawValue: "expired")
        public static let notYetValid = Code(rawValue: "not_yet_valid")
        public static let issuedInFuture = Code(rawValue: "issued_in_future")
        public static let issuerMismatch = Code(rawValue: "issuer_mismatch")
        public static let audienceMismatch = Code(rawValue: "audience_mismatch")
        public static let typeMismatch = Code(rawValue: "type_mismatch")
        public static let missingClaim = Code(rawValue: "missing_claim")
        public static let invalidClaim = Code(rawValue: "invalid_claim")
        public static let crypto = Code(rawValue: "crypto")
    }

    public let code: Code
    public let claim: String?
    public let reason: String

    public init(_ code: Code, claim: String? = nil, _ reason: String) {
        self.code = code
        self.claim = claim
        self.reason = reason
    }

    public var description: String {
        claim.map { "\(code) (\($0)): \(reason)" } ?? "\(code): \(reason)"
    }
}
