public import JOSE

/// Why a DPoP proof was refused, as RFC 9449 §7.1 and §9 answer it: `invalid_dpop_proof`, or
/// `use_dpop_nonce` when the only thing wrong is a missing, expired or unknown server nonce.
public struct DPoPProofError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        case invalidProof
        case useNonce
    }

    public let code: Code
    /// The §4.3 rule that failed, for the wire (never a key or a claim value).
    public let reason: String
    /// The JOSE failure underneath, for logs.
    public let cause: JOSEError?

    public init(_ code: Code, _ reason: String, cause: JOSEError? = nil) {
        self.code = code
        self.reason = reason
        self.cause = cause
    }

    public var wireCode: OAuthErrorCode { code == .useNonce ? .use_dpop_nonce : .invalid_dpop_proof }

    public var description: String {
        cause.map { "\(reason) (\($0))" } ?? reason
    }
}
