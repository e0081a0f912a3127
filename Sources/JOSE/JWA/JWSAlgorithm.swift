/// The one algorithm table (RFC 7518 §3, RFC 8037 §3.1). Each entry fixes the key type,
/// curve, digest, padding and signature size; `none` is not in it, so it cannot be allowed
/// by accident. Verifiers take a set of these as their allow-list.
public enum JWSAlgorithm: String, CaseIterable, Sendable, Hashable {
    case RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, HS256, HS384, HS512

    public enum Family: Sendable { case rsaPKCS1, rsaPSS, ecdsa, eddsa, hmac }

    public var family: Family {
        switch self {
        case .RS256, .RS384, .RS512: .rsaPKCS1
        case .PS256, .PS384, .PS512: .rsaPSS
        case .ES256, .ES384, .ES512: .ecdsa
        case .EdDSA: .eddsa
        case .HS256, .HS384, .HS512: .hmac
        }
    }

    /// nil for EdDSA (Ed25519 hashes internally).
    public var digest: Digest? {
        switch self {
        case .RS256, .PS256, .ES256, .HS256: .sha256
        case .RS384, .PS384, .ES384, .HS384: .sha384
        case .RS512, .PS512, .ES512, .HS512: .sha512
        case .EdDSA: nil
        }
    }

    /// The JWK `kty` a key for this algorithm must have.
    public var keyType: String {
        switch family {
        case .rsaPKCS1, .rsaPSS: "RSA"
        case .ecdsa: "EC"
        case .eddsa: "OKP"
        case .hmac: "oct"
        }
    }

    /// The curve an EC/OKP key must be on (RFC 7518 §3.4: ES256 ⇔ P-256, …).
    public var curve: String? {
        switch self {
        case .ES256: "P-256"
        case .ES384: "P-384"
        case .ES512: "P-521"
        case .EdDSA: "Ed25519"
        default: nil
        }
    }

    /// ECDSA r‖s length (RFC 7518 §3.4), Ed25519 64; nil where it depends on the key.
    public var fixedSignatureSize: Int? {
        switch self {
        case .ES256: 64
        case .ES384: 96
        case .ES512: 132
        case .EdDSA: 64
        case .HS256: 32
        case .HS384: 48
        case .HS512: 64
        default: nil
        }
    }

    /// RSA moduli under this are refused (RFC 7518 §3.3 sets 2048 as the minimum).
    public static let minimumRSABits = 2048

    public var isSymmetric: Bool { family == .hmac }
}
