import JOSE
import MessageSignatures

/// A verifier of HTTP Message Signatures that routes name (`signatures.NAME`, route key
/// `verify_signature`): where the signers' keys come from, and what a request's signature must
/// cover, say and be (RFC 9421 §1.4: the application's profile of the RFC).
struct SignaturePolicy: Sendable {
    var name: String
    var keys = SignatureKeySource.none
    var requirements: SignatureRequirements
    /// The RSA algorithm of an RSA key with no `alg` member (RFC 9421 §3.3.1, §3.3.2).
    var rsaAlgorithm = SignatureAlgorithm(name: "rsa-pss-sha512")!
    /// Headers the upstream gets with the verified signature's `keyid` and `tag`.
    var keyidHeader: String?
    var tagHeader: String?
    /// `profile: fapi2`: FAPI 2.0 Message Signing's rules for requests (SignaturePolicy+FAPI2).
    var profile: SecurityProfile?
    /// A request with content must cover `content-digest` (FAPI 2.0 Message Signing's
    /// request rule; RFC 9421 §7.2.8: a signature over the head alone says nothing of the body).
    var digestRequiredWithContent = false

    init(name: String) {
        self.name = name
        requirements = Self.requirements(
            components: Self.defaultComponents, coverIfPresent: [], tag: nil, maxAge: 60, leeway: 5,
            nonceRequired: false)
    }

    static let defaultComponents = ["@method", "@target-uri"].map { try! ComponentIdentifier(config: $0) }

    static func requirements(
        components: [ComponentIdentifier], coverIfPresent: [ComponentIdentifier], tag: String?, maxAge: Int64?,
        leeway: Int64, nonceRequired: Bool
    ) -> SignatureRequirements {
        SignatureRequirements(
            components: components, coverIfPresent: coverIfPresent, tag: tag, maxAge: maxAge, leeway: leeway,
            nonceRequired: nonceRequired)
    }

    /// The headers this policy sets, lowercase: stripped from every client request.
    var headerNames: [String] { [keyidHeader, tagHeader].compactMap { $0?.lowercased() } }

    /// The label `Accept-Signature` asks for.
    static let acceptLabel = "sig1"
}

/// Where a policy finds the key a signature's `keyid` names.
enum SignatureKeySource: Sendable {
    case none
    /// An issuer's JWKS (`keys: { issuer: NAME }`), refetched once for an unknown `keyid` as
    /// its tokens' keys are. Asymmetric keys only: an issuer publishes no secrets.
    case issuer(String)
    /// A JWK Set read from a file at load (`keys: { jwks_file: PATH }`): the signers' public
    /// keys, or shared `oct` secrets for `hmac-sha256` (a Web Bot Auth key directory, a
    /// partner's keys).
    case jwksFile(String, JWKSet)
    /// The keys of the client the verified access token was issued to (its `client_id`, else
    /// `azp`), from a registry file (`keys: { client_jwks: PATH }`): a JSON object from client
    /// id to that client's JWK Set, as the AS holds them. A client signs only with its own
    /// keys: a `keyid` of another client's set is unknown here.
    case clientJWKS(String, [String: JWKSet])
}
