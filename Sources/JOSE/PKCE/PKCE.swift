/// Proof Key for Code Exchange, S256 only (RFC 7636 §4).
public enum PKCE {
    /// A fresh code_verifier: 32 random bytes, base64url → 43 characters (§4.1, §7.1).
    public static func makeVerifier() -> String { Base64URL.encode(SecureRandom.bytes(32)) }

    /// code_challenge = BASE64URL(SHA256(ASCII(code_verifier))) (§4.2). nil if the
    /// verifier is not 43–128 characters of [A-Za-z0-9-._~].
    public static func challenge(for verifier: String) -> String? {
        let u = verifier.utf8
        guard (43...128).contains(u.count),
            u.allSatisfy({ c in
                (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)
                    || c == 0x2d || c == 0x2e || c == 0x5f || c == 0x7e
            })
        else { return nil }
        return Base64URL.encode(Digest.sha256.hash(Array(u)))
    }

    /// Whether `verifier` is the one `challenge` was made from (§4.6), compared in constant
    /// time: the AS side of PKCE.
    public static func matches(verifier: String, challenge: String) -> Bool {
        guard let made = self.challenge(for: verifier) else { return false }
        return ConstantTime.equals(made, challenge)
    }
}
