public import JOSE

/// This gateway's authorization server metadata (RFC 8414 §2), listing exactly what it
/// implements: the code flow with PKCE S256 only, refresh tokens, the jwt-bearer grant with
/// ID-JAGs when they are accepted, public clients and `private_key_jwt` with keys from the
/// client's metadata document, Client ID Metadata Documents, the `iss` authorization response
/// parameter (RFC 9207), and DPoP (RFC 9449 §5.1).
public struct AuthorizationServerMetadata: Sendable {
    public var issuer: String
    public var scopes: [String]
    public var registration: Bool
    public var identityAssertions: Bool
    public var dpopAlgorithms: [String]
    public var signingAlgorithms: [String]
    /// The code flow (authorization_code, refresh_token, its endpoint) is offered.
    public var codeFlow: Bool

    public static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    public static let idJAGProfile = "urn:ietf:params:oauth:grant-profile:id-jag"

    /// The endpoints' paths under the issuer.
    public enum Path {
        public static let authorize = "/oauth2/as/authorize"
        public static let token = "/oauth2/as/token"
        public static let jwks = "/oauth2/as/jwks"
        public static let register = "/oauth2/as/register"
        public static let consent = "/oauth2/as/consent"
        /// A user's own page of the consents they gave.
        public static let consents = "/oauth2/as/consents"
        /// RFC 8414 §3.1: the well-known path, before the issuer's own path.
        public static let metadata = "/.well-known/oauth-authorization-server"
    }

    public init(
        issuer: String, scopes: [String], registration: Bool, identityAssertions: Bool,
        dpopAlgorithms: [String], signingAlgorithms: [String], codeFlow: Bool = true
    ) {
        self.codeFlow = codeFlow
        self.issuer = issuer
        self.scopes = scopes
        self.registration = registration
        self.identityAssertions = identityAssertions
        self.dpopAlgorithms = dpopAlgorithms
        self.signingAlgorithms = signingAlgorithms
    }

    public var document: JSONObject {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var grants = codeFlow ? ["authorization_code", "refresh_token"] : []
        if identityAssertions { grants.append(Self.jwtBearer) }
        var o = JSONObject()
        o["issuer"] = .string(issuer)
        if codeFlow { o["authorization_endpoint"] = .string(base + Path.authorize) }
        o["token_endpoint"] = .string(base + Path.token)
        o["jwks_uri"] = .string(base + Path.jwks)
        if registration { o["registration_endpoint"] = .string(base + Path.register) }
        // Never offline_access: refresh tokens come with the code flow, not by asking for a scope.
        o["scopes_supported"] = .array(scopes.filter { $0 != "offline_access" }.map { .string($0) })
        // RFC 8414 §2 requires response_types_supported: with no code flow, none.
        o["response_types_supported"] = .array(codeFlow ? [.string("code")] : [])
        if codeFlow { o["response_modes_supported"] = .array([.string("query")]) }
        o["grant_types_supported"] = .array(grants.map { .string($0) })
        if codeFlow { o["code_challenge_methods_supported"] = .array([.string("S256")]) }
        o["token_endpoint_auth_methods_supported"] = .array(
            (codeFlow ? [.string("none")] : []) + [.string("private_key_jwt")])
        o["token_endpoint_auth_signing_alg_values_supported"] = .array(signingAlgorithms.map { .string($0) })
        o["client_id_metadata_document_supported"] = .bool(true)
        if codeFlow { o["authorization_response_iss_parameter_supported"] = .bool(true) }
        if !dpopAlgorithms.isEmpty {
            o["dpop_signing_alg_values_supported"] = .array(dpopAlgorithms.map { .string($0) })
        }
        if identityAssertions {
            o["authorization_grant_profiles_supported"] = .array([.string(Self.idJAGProfile)])
        }
        return o
    }
}
