public import JOSE

/// A Protected Resource Metadata document (RFC 9728 §2): what a client needs to learn, from
/// a resource's 401 alone, which authorization servers issue tokens for it, with which scopes,
/// and how to present them. Built once per config; `json` is the body served at
/// `ResourceIdentifier.metadataPath` (§3.2).
public struct ProtectedResourceMetadata: Sendable, Equatable {
    /// §2 `resource` (REQUIRED): the identifier, identical to the one the metadata URL was
    /// derived from (§3.3).
    public var resource: ResourceIdentifier
    /// §2 `authorization_servers`: issuer identifiers (RFC 8414 §2) of the servers whose
    /// tokens the resource accepts.
    public var authorizationServers: [String]
    /// §2 `scopes_supported` (RECOMMENDED): the scopes the resource asks for; left out when none.
    public var scopesSupported: [String]
    /// §2 `bearer_methods_supported`: "header", "body", "query" (RFC 6750 §2.1–§2.3).
    public var bearerMethodsSupported: [String]
    /// §2 `dpop_signing_alg_values_supported`: the DPoP proof algorithms accepted (RFC 9449);
    /// nil on a resource that takes no DPoP.
    public var dpopSigningAlgValuesSupported: [String]?
    /// §2 `dpop_bound_access_tokens_required`: only DPoP-bound tokens are accepted; nil
    /// leaves it out (the RFC's default is false).
    public var dpopBoundAccessTokensRequired: Bool?
    /// §2 `resource_name`: a human-readable name for end users.
    public var resourceName: String?
    /// §2 `resource_documentation`: a URL of documentation for developers.
    public var resourceDocumentation: String?

    public init(
        resource: ResourceIdentifier, authorizationServers: [String], scopesSupported: [String] = [],
        bearerMethodsSupported: [String] = ["header"], dpopSigningAlgValuesSupported: [String]? = nil,
        dpopBoundAccessTokensRequired: Bool? = nil, resourceName: String? = nil, resourceDocumentation: String? = nil
    ) {
        self.resource = resource
        self.authorizationServers = authorizationServers
        self.scopesSupported = scopesSupported
        self.bearerMethodsSupported = bearerMethodsSupported
        self.dpopSigningAlgValuesSupported = dpopSigningAlgValuesSupported
        self.dpopBoundAccessTokensRequired = dpopBoundAccessTokensRequired
        self.resourceName = resourceName
        self.resourceDocumentation = resourceDocumentation
    }

    /// The document as a JSON object (§3.2), members in the order §2 lists them; optional
    /// members without a value are left out, not sent as null.
    public var jsonObject: JSONObject {
        func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }
        var o = JSONObject()
        o["resource"] = .string(resource.uri)
        if !authorizationServers.isEmpty { o["authorization_servers"] = strings(authorizationServers) }
        if !scopesSupported.isEmpty { o["scopes_supported"] = strings(scopesSupported) }
        o["bearer_methods_supported"] = strings(bearerMethodsSupported)
        if let resourceName { o["resource_name"] = .string(resourceName) }
        if let resourceDocumentation { o["resource_documentation"] = .string(resourceDocumentation) }
        if let algs = dpopSigningAlgValuesSupported { o["dpop_signing_alg_values_supported"] = strings(algs) }
        if let required = dpopBoundAccessTokensRequired { o["dpop_bound_access_tokens_required"] = .bool(required) }
        return o
    }

    /// The body served for it.
    public var json: String { JSONSerializer.serialize(.object(jsonObject)) }
}
