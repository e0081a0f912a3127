public import JOSE

/// What a verifier asks of a message's signature (RFC 9421 §1.4: the application's profile):
/// the components it must cover, the tag it must carry, how old it may be, and whether a
/// nonce is needed.
public struct SignatureRequirements: Sendable {
    public let components: [ComponentIdentifier]
    /// Fields that must be covered when the message has them (FAPI 2.0 Message Signing §5.4:
    /// `dpop` when it is sent).
    public let coverIfPresent: [ComponentIdentifier]
    public let tag: String?
    /// Seconds since `created`; nil: any age (until `expires`).
    public let maxAge: Int64?
    /// Seconds of clock skew allowed either way.
    public let leeway: Int64
    public let nonceRequired: Bool
    /// The algorithms (by their cryptography) a key may sign with here; nil: any the key
    /// fixes. A profile narrows them (FAPI 2.0: no RSASSA-PKCS1-v1_5, no shared secrets).
    public let algorithms: Set<JWSAlgorithm>?

    public init(
        components: [ComponentIdentifier], coverIfPresent: [ComponentIdentifier] = [], tag: String?,
        maxAge: Int64?, leeway: Int64, nonceRequired: Bool, algorithms: Set<JWSAlgorithm>? = nil
    ) {
        self.components = components
        self.coverIfPresent = coverIfPresent
        self.tag = tag
        self.maxAge = maxAge
        self.leeway = leeway
        self.nonceRequired = nonceRequired
        self.algorithms = algorithms
    }
}

/// RFC 9421 §3.2's verification, in two steps around the key lookup (which may wait on a
/// key fetch): `select` applies every rule that needs no key, `verify` the ones that do.
public enum SignatureVerifier {
    /// The signature this verifier judges: the first one with the required tag. Refuses it
    /// when a required component is not covered or its times are out of bounds.
    public static func select(
        _ fields: MessageSignatureFields, for requirements: SignatureRequirements, in message: SignedMessage,
        now: Int64
    ) throws -> MessageSignatureFields.Labeled {
        guard
            let chosen = fields.signatures.first(where: {
                requirements.tag == nil || $0.parameters.tag == requirements.tag
            })
        else {
            throw MessageSignatureError(.wrongTag, "no signature has the tag \(requirements.tag ?? "")")
        }
        let params = chosen.parameters
        for component in requirements.components where !params.covers(component) {
            throw MessageSignatureError(.notCovered, "the signature does not cover \(component)")
        }
        for component in requirements.coverIfPresent
        where !params.covers(component) && (component.isDerived || !message.lines(component.name).isEmpty) {
            throw MessageSignatureError(.notCovered, "the signature does not cover \(component), which the request has")
        }
        try checkTimes(params, requirements, now: now)
        if requirements.nonceRequired, params.nonce == nil {
            throw MessageSignatureError(.replayed, "the signature has no nonce")
        }
        return chosen
    }

    /// §3.2 step 7 and §7.2.4: a signature says when it was made; one made in the future
    /// (beyond the skew allowed) or longer ago than `maxAge`, or past its own `expires`, is
    /// refused.
    static func checkTimes(_ params: SignatureParameters, _ requirements: SignatureRequirements, now: Int64) throws {
        guard let created = params.created else {
            throw MessageSignatureError(.expired, "the signature has no created time")
        }
        // RFC 9651 integers have at most 15 digits, and the spans are config's: saturating
        // all the same, so no pair of them can trap whatever the bounds become.
        if created > now.saturatingAdd(requirements.leeway) {
            throw MessageSignatureError(.expired, "the signature was created in the future")
        }
        if let maxAge = requirements.maxAge,
            now.saturatingSubtract(created) > maxAge.saturatingAdd(requirements.leeway)
        {
            throw MessageSignatureError(.expired, "the signature is older than \(maxAge) s")
        }
        if let expires = params.expires, expires < now.saturatingSubtract(requirements.leeway) {
            throw MessageSignatureError(.expired, "the signature has expired")
        }
    }

    /// Verifies `chosen` with `key`: the algorithm is the key's (`SignatureAlgorithm.of`), and
    /// an `alg` parameter that names another is refused (§3.2 step 5), and so is an algorithm
    /// outside `allowed` (§3.2 step 5: the verifier's own list). Returns the algorithm.
    @discardableResult
    public static func verify(
        _ chosen: MessageSignatureFields.Labeled, in message: SignedMessage, with key: JWK,
        rsa: SignatureAlgorithm = SignatureAlgorithm(jws: .PS512), allowed: Set<JWSAlgorithm>? = nil
    ) throws -> SignatureAlgorithm {
        guard let algorithm = SignatureAlgorithm.of(key, rsa: rsa) else {
            throw MessageSignatureError(.unknownKey, "the key fixes no signature algorithm")
        }
        if let allowed, !allowed.contains(algorithm.jws) {
            throw MessageSignatureError(.algorithmMismatch, "the key's algorithm \(algorithm) is not accepted here")
        }
        if let alg = chosen.parameters.alg, alg != algorithm.name {
            throw MessageSignatureError(.algorithmMismatch, "alg \(alg) is not the key's algorithm")
        }
        let base = try SignatureBase.build(chosen.parameters, of: message)
        guard algorithm.verify(chosen.signature, over: base, with: key) else {
            throw MessageSignatureError(.badSignature, "the signature does not verify")
        }
        return algorithm
    }
}

/// `Accept-Signature` (RFC 9421 §5.1): what a verifier wants signed, sent with a refusal so
/// that the client can sign again: `label=(components);created;nonce;tag="…"`.
public enum AcceptSignature {
    public static func field(label: String, _ requirements: SignatureRequirements) -> String {
        var out = label + "=("
        out += requirements.components.map(\.serialized).joined(separator: " ")
        out += ");created"
        if requirements.nonceRequired { out += ";nonce" }
        if let tag = requirements.tag { out += ";tag=" + SFString.quoted(tag) }
        return out
    }
}

/// A Structured Field string (RFC 9651 §3.3.3), for names checked at load to be printable
/// ASCII.
enum SFString {
    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `s` quoted onto `out`: `"`, each `"` and `\` escaped, `"` (§4.1.6).
    static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(b)
        }
        out.append(UInt8(ascii: "\""))
    }
}
