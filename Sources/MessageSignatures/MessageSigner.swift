public import JOSE

/// Signs a message this side sends (RFC 9421 §3.1): builds the base over `message` and writes
/// the `Signature-Input` and `Signature` members under `label`.
public enum MessageSigner {
    public struct Signed: Sendable {
        /// `label=(…);created=…` for `Signature-Input`.
        public let input: String
        /// `label=:…:` for `Signature`.
        public let signature: String
    }

    public static func sign(
        _ message: SignedMessage, _ parameters: SignatureParameters, label: String, key: JWK,
        algorithm: SignatureAlgorithm
    ) throws -> Signed {
        let serialized = parameters.serialized
        let base = try SignatureBase.build(parameters, of: message, serialized: serialized)
        let bytes = try algorithm.sign(base, with: key)
        return Signed(
            input: label + "=" + String(decoding: serialized, as: UTF8.self),
            signature: label + "=:" + Base64.standard(bytes) + ":")
    }
}
