/// A DPoP proof that passed RFC 9449 §4.3's checks (all but the replay check, which needs
/// shared state, and the token binding, which needs the token: the caller's).
public struct DPoPProof: Sendable {
    /// RFC 7638 thumbprint of the proof's key: what `cnf.jkt` must equal (§6.1).
    public let jkt: String
    public let jti: String
    public let iat: Int64
    public let nonce: String?
    /// Until when this proof would be accepted again: the replay cache must remember its
    /// `jti` at least this long (§11.1).
    public let acceptableUntil: Int64
    /// The proof's nonce is valid but a newer one exists: send a fresh `DPoP-Nonce` (§8.2).
    public let nonceIsStale: Bool
}
