import JOSE
import MessageSignatures
import Yams

/// `profile: fapi2` on a signature policy, and on the answers of its routes: FAPI 2.0 Message
/// Signing's rules for HTTP message signatures (its HTTP signing section, draft -02 §5.6, now
/// the FAPI 2.0 HTTP Signatures draft). check-config refuses a policy that asks for less;
/// what it leaves out is filled in.
///
/// Requests (signed by the client, verified here):
/// - covered: `@method`, `@target-uri`, `authorization`; `dpop` when it is sent;
///   `content-digest` when the request has content;
/// - `created` (every policy requires it), `tag="fapi-2-request"`;
/// - keys of the Security Profile's algorithms (§5.4.1): no RSASSA-PKCS1-v1_5, no shared
///   secret, no other curve.
///
/// Answers (signed here, `sign_response`): `@status`, `content-type`, `content-digest`, the
/// request's `@method` and `@target-uri` and its signature (`;req`), `tag="fapi-2-response"`,
/// and a key of those algorithms.
enum FAPI2Signatures {
    static let requestTag = "fapi-2-request"
    static let responseTag = "fapi-2-response"
    static let requestComponents = ["@method", "@target-uri", "authorization"].map {
        try! ComponentIdentifier(config: $0)
    }
    static let coveredWhenSent = try! ComponentIdentifier(config: "dpop")
    static let responseComponents = ["@status", "content-type", "content-digest"].map {
        try! ComponentIdentifier(config: $0)
    }
    /// The Security Profile's PS256, ES256 and EdDSA (Ed25519), and the registry's RSASSA-PSS
    /// (`rsa-pss-sha512`): the one RSA scheme RFC 9421 registers that the profile's PSS rule
    /// admits (the same padding with a longer hash).
    static let algorithms: Set<JWSAlgorithm> = [.PS256, .PS512, .ES256, .EdDSA]
}

extension ConfigParser {
    /// A policy with `profile: fapi2`: the rules above, each refusal naming what is missing.
    static func fapi2Signatures(
        _ policy: inout SignaturePolicy, _ keys: SignaturePolicyKeys, path p: String, _ r: ConfigReader
    ) {
        let old = policy.requirements
        var components = old.components
        if keys.components == nil {
            components = FAPI2Signatures.requestComponents
        } else {
            let missing = FAPI2Signatures.requestComponents.filter { !components.contains($0) }
            if !missing.isEmpty {
                r.problem(
                    "\(p).components", keys.components?.node,
                    "must cover \(missing.map(\.serialized).joined(separator: ", ")) with profile: fapi2 "
                        + "(FAPI 2.0 Message Signing: the method, the target and the access token)")
            }
        }
        var ifPresent = old.coverIfPresent
        if !ifPresent.contains(FAPI2Signatures.coveredWhenSent) { ifPresent.append(FAPI2Signatures.coveredWhenSent) }
        var tag = old.tag ?? FAPI2Signatures.requestTag
        if tag != FAPI2Signatures.requestTag {
            r.problem("\(p).tag", keys.tagNode, "must be \(FAPI2Signatures.requestTag) with profile: fapi2")
            tag = FAPI2Signatures.requestTag
        }
        if !FAPI2Signatures.algorithms.contains(policy.rsaAlgorithm.jws) {
            r.problem(
                "\(p).rsa_algorithm", keys.rsaAlgorithmNode,
                "must be rsa-pss-sha512 with profile: fapi2 (FAPI 2.0 Security Profile §5.4.1: no PKCS#1 v1.5)")
        }
        if case .jwksFile(_, let set) = policy.keys, set.keys.contains(where: { $0.kty == "oct" }) {
            r.problem(
                "\(p).keys.jwks_file", keys.keysNode,
                "holds shared secrets: with profile: fapi2 requests are signed with the client's private key")
        }
        if case .clientJWKS(_, let sets) = policy.keys,
            sets.values.contains(where: { $0.keys.contains(where: { $0.kty == "oct" }) })
        {
            r.problem(
                "\(p).keys.client_jwks", keys.keysNode,
                "holds shared secrets: with profile: fapi2 requests are signed with the client's private key")
        }
        policy.digestRequiredWithContent = true
        policy.requirements = SignatureRequirements(
            components: components, coverIfPresent: ifPresent, tag: tag, maxAge: old.maxAge, leeway: old.leeway,
            nonceRequired: old.nonceRequired, algorithms: FAPI2Signatures.algorithms)
    }

    /// A route's answers signed under the profile (its `sign_response.profile`, or a
    /// `verify_signature` policy of the profile): the tag filled in or checked, the
    /// components and the key's algorithm checked.
    static func fapi2ResponseSigning(
        _ signing: inout MessageSigningConfig, node: Node?, path p: String, _ r: ConfigReader
    ) {
        if signing.tag == nil {
            signing.tag = FAPI2Signatures.responseTag
        } else if signing.tag != FAPI2Signatures.responseTag {
            r.problem("\(p).tag", node?["tag"], "must be \(FAPI2Signatures.responseTag) with profile: fapi2")
        }
        let missing = FAPI2Signatures.responseComponents.filter { !signing.components.contains($0) }
        if !missing.isEmpty {
            r.problem(
                "\(p).components", node?["components"],
                "must cover \(missing.map(\.serialized).joined(separator: ", ")) with profile: fapi2 "
                    + "(FAPI 2.0 Message Signing: the status and the content)")
        }
        if !FAPI2Signatures.algorithms.contains(signing.algorithm.jws) {
            r.problem(
                "\(p).key_file", node?["key_file"],
                "signs with \(signing.algorithm): with profile: fapi2 the key must be ES256, Ed25519 or RSA-PSS")
        }
        signing.profile = .fapi2
    }
}
