import JOSE

/// What the gateway needs from an authorization server's metadata (OIDC Discovery 1.0 §3,
/// RFC 8414 §2, RFC 9126 §5, RFC 9207 §3, RP-Initiated Logout §2.1, RFC 7009).
public struct ProviderMetadata: Sendable, Equatable {
    public var issuer: String
    public var authorizationEndpoint: String?
    public var tokenEndpoint: String?
    public var jwksURI: String?
    public var pushedAuthorizationRequestEndpoint: String?
    /// RFC 9126 §5: the AS accepts authorization requests only through PAR.
    public var requirePushedAuthorizationRequests = false
    /// RFC 9207 §3: the AS puts `iss` in its authorization responses.
    public var authorizationResponseIssParameterSupported = false
    public var endSessionEndpoint: String?
    public var revocationEndpoint: String?
    public var introspectionEndpoint: String?
    public var userinfoEndpoint: String?
    public var requestURIParameterSupported = false

    /// RFC 8705 §5 `mtls_endpoint_aliases`: the endpoints a client presenting a certificate
    /// uses instead (token, PAR, revocation, introspection, userinfo), by metadata name.
    public var mtlsEndpointAliases: [String: String] = [:]
    /// RFC 8705 §3.3 `tls_client_certificate_bound_access_tokens`: the AS binds the tokens it
    /// issues over mutual TLS to the client's certificate.
    public var tlsClientCertificateBoundAccessTokens = false
    /// Aliases the metadata gave that are not https URLs with a host (and no userinfo).
    public var refusedMTLSAliases: [String] = []

    /// `https://host[:port]/…`: a host, and no userinfo to confuse which host it is.
    static func isHTTPSURL(_ s: String) -> Bool {
        guard s.hasPrefix("https://") else { return false }
        let authority = s.dropFirst(8).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !authority.isEmpty && !authority.contains("@") && !authority.hasPrefix(":")
    }

    public init(issuer: String) { self.issuer = issuer }

    /// The aliases a mutual-TLS client calls (RFC 8705 §5): each endpoint with an alias
    /// replaced by it, the others as they are.
    public func usingMTLSAliases() -> ProviderMetadata {
        var m = self
        let a = mtlsEndpointAliases
        m.tokenEndpoint = a["token_endpoint"] ?? tokenEndpoint
        m.pushedAuthorizationRequestEndpoint =
            a["pushed_authorization_request_endpoint"] ?? pushedAuthorizationRequestEndpoint
        m.revocationEndpoint = a["revocation_endpoint"] ?? revocationEndpoint
        m.introspectionEndpoint = a["introspection_endpoint"] ?? introspectionEndpoint
        m.userinfoEndpoint = a["userinfo_endpoint"] ?? userinfoEndpoint
        return m
    }

    /// Parses metadata; its `issuer` must equal `expectedIssuer` exactly (RFC 8414 §3.3, OIDC
    /// Discovery §4.3 — mix-up defence), and every endpoint must be an http(s) URL — https
    /// when the issuer is (RFC 8414 §2: a downgrade would put codes and tokens in clear text).
    /// `alsoNamed`: the other `issuer` values a multi-tenant issuer's document may say (see
    /// `IssuerTemplate.namesDiscoveryIssuer`); the result's `issuer` is `expectedIssuer`.
    public static func parse(_ body: [UInt8], expectedIssuer: String, alsoNamed: [String] = []) throws
        -> ProviderMetadata
    {
        let object = try JSONParser.parseObject(body, what: "the provider metadata")
        guard let said = object["issuer"]?.string, said == expectedIssuer || alsoNamed.contains(said) else {
            throw JOSEError(.issuerMismatch, claim: "issuer", "the metadata names another issuer")
        }
        func url(_ name: String) throws -> String? {
            guard let v = object[name] else { return nil }
            guard let s = v.string,
                s.hasPrefix("https://") || (!expectedIssuer.hasPrefix("https://") && s.hasPrefix("http://"))
            else {
                throw JOSEError(
                    .malformed, claim: name,
                    expectedIssuer.hasPrefix("https://") ? "must be an https URL" : "must be an http(s) URL")
            }
            return s
        }
        var m = ProviderMetadata(issuer: expectedIssuer)
        m.authorizationEndpoint = try url("authorization_endpoint")
        m.tokenEndpoint = try url("token_endpoint")
        m.jwksURI = try url("jwks_uri")
        m.pushedAuthorizationRequestEndpoint = try url("pushed_authorization_request_endpoint")
        m.endSessionEndpoint = try url("end_session_endpoint")
        m.revocationEndpoint = try url("revocation_endpoint")
        m.introspectionEndpoint = try url("introspection_endpoint")
        m.userinfoEndpoint = try url("userinfo_endpoint")
        m.requirePushedAuthorizationRequests = object["require_pushed_authorization_requests"] == .bool(true)
        m.authorizationResponseIssParameterSupported =
            object["authorization_response_iss_parameter_supported"] == .bool(true)
        m.requestURIParameterSupported = object["request_uri_parameter_supported"] == .bool(true)
        m.tlsClientCertificateBoundAccessTokens = object["tls_client_certificate_bound_access_tokens"] == .bool(true)
        // An alias that is not usable is left out (and named in `refusedMTLSAliases`): it
        // concerns only the clients with certificates, never the metadata as a whole.
        if case .object(let o)? = object["mtls_endpoint_aliases"] {
            for name in [
                "token_endpoint", "pushed_authorization_request_endpoint", "revocation_endpoint",
                "introspection_endpoint", "userinfo_endpoint"
            ] {
                guard let v = o[name] else { continue }
                // Mutual TLS means TLS: an alias is https whatever the issuer's scheme.
                if let s = v.string, Self.isHTTPSURL(s) {
                    m.mtlsEndpointAliases[name] = s
                } else {
                    m.refusedMTLSAliases.append(name)
                }
            }
        } else if object["mtls_endpoint_aliases"] != nil {
            m.refusedMTLSAliases.append("mtls_endpoint_aliases")
        }
        return m
    }
}
