/// Why a message signature, its fields or a digest were refused. The description is for the
/// client (an error description) and the log: it names the rule, never key material.
public struct MessageSignatureError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// No `Signature-Input` or `Signature` field, or no member in one for the other.
        case missing
        /// A field that is not the Structured Field it must be (RFC 9651), or a member that
        /// is not the type RFC 9421 §4 gives it.
        case malformed
        /// No signature carries the tag the verifier asks for (RFC 9421 §2.3 `tag`).
        case wrongTag
        /// A component the verifier requires is not covered (RFC 9421 §3.2 step 6).
        case notCovered
        /// A covered component the message does not have, or cannot give (§2.5).
        case componentMissing
        /// A component identifier this verifier cannot rebuild: an unknown parameter, `;tr`.
        case unsupportedComponent
        /// `created` in the future or too old, `expires` passed, or no `created` (§3.2 step 7).
        case expired
        /// No `nonce` where one is required, or one already seen (§7.2.2).
        case replayed
        /// No key under the `keyid`, or none at all.
        case unknownKey
        /// The message's `alg` is not the key's algorithm (§3.2 step 5: the algorithm comes
        /// from the key).
        case algorithmMismatch
        /// The signature does not verify over the rebuilt base.
        case badSignature
        /// `Content-Digest` does not match the content, or names no algorithm known here.
        case digestMismatch
    }

    public let reason: Reason
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { detail }
}
