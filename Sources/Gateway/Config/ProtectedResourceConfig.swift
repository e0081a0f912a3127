import OAuth

/// A token route's `resource` (RFC 8707) and what its Protected Resource Metadata (RFC 9728)
/// says besides what the route's other settings give: `resource_name`,
/// `resource_documentation`.
struct ProtectedResourceConfig: Sendable {
    /// The route's resource identifier: every token must carry it in `aud`, on top of its
    /// issuer's `audiences`.
    var identifier: ResourceIdentifier
    /// RFC 9728 §2 `resource_name`.
    var name: String?
    /// RFC 9728 §2 `resource_documentation`: an https URL.
    var documentation: String?
}

/// One Protected Resource Metadata document as the gateway serves it (RFC 9728 §3.2): built
/// when the config is parsed, looked up by path before routing.
struct ProtectedResourceDocument: Sendable, Equatable {
    var metadata: ProtectedResourceMetadata
    /// The JSON body, serialized once.
    var body: String
    /// The first route that declared it (for the log and check-config's messages).
    var route: String

    init(metadata: ProtectedResourceMetadata, route: String) {
        self.metadata = metadata
        self.body = metadata.json + "\n"
        self.route = route
    }

    /// The path it is served at (§3.1).
    var path: String { metadata.resource.metadataPath }
}
