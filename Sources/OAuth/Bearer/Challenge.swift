/// RFC 6750 §3 error codes, with the HTTP status each maps to (§3.1), plus RFC 9449 §7.1's.
public enum OAuthErrorCode: String, Sendable {
    case invalid_request, invalid_token, insufficient_scope, invalid_dpop_proof, use_dpop_nonce
    /// RFC 9470 §3: the token is good, but the user's authentication is not strong or not
    /// recent enough for this resource.
    case insufficient_user_authentication

    public var status: Int {
        switch self {
        case .invalid_request: 400
        case .invalid_token, .invalid_dpop_proof, .use_dpop_nonce, .insufficient_user_authentication: 401
        case .insufficient_scope: 403
        }
    }
}

/// A `WWW-Authenticate` challenge (RFC 6750 §3, RFC 9449 §7.1). A request that carried no
/// credentials gets the bare form (no error attributes, §3.1).
public struct Challenge: Sendable, Equatable {
    public var scheme: String
    public var realm: String?
    public var error: OAuthErrorCode?
    public var errorDescription: String?
    public var scope: [String]?
    /// RFC 9449 §7.1: the algorithms accepted for DPoP proofs.
    public var algs: [String]?
    /// RFC 9728 §5.1: the URL of the resource's Protected Resource Metadata.
    public var resourceMetadata: String?
    /// RFC 9470 §3: the authentication context classes and the freshness that would do.
    public var acrValues: [String]? = nil
    public var maxAge: Int? = nil

    public init(
        scheme: String = "Bearer", realm: String? = nil, error: OAuthErrorCode? = nil,
        errorDescription: String? = nil, scope: [String]? = nil, algs: [String]? = nil,
        resourceMetadata: String? = nil
    ) {
        self.scheme = scheme
        self.realm = realm
        self.error = error
        self.errorDescription = errorDescription
        self.scope = scope
        self.algs = algs
        self.resourceMetadata = resourceMetadata
    }

    /// The header value; every attribute a quoted-string with `"` and `\` escaped (RFC 9110
    /// §5.6.4) and characters outside %x20-7E dropped (§3: error_description is ASCII).
    public var headerValue: String {
        var attrs: [String] = []
        if let realm { attrs.append("realm=\(Challenge.quoted(realm))") }
        if let algs { attrs.append("algs=\(Challenge.quoted(algs.joined(separator: " ")))") }
        if let error { attrs.append("error=\(Challenge.quoted(error.rawValue))") }
        if let errorDescription { attrs.append("error_description=\(Challenge.quoted(errorDescription))") }
        if let scope { attrs.append("scope=\(Challenge.quoted(scope.joined(separator: " ")))") }
        if let acrValues { attrs.append("acr_values=\(Challenge.quoted(acrValues.joined(separator: " ")))") }
        if let maxAge { attrs.append("max_age=\(Challenge.quoted(String(maxAge)))") }
        if let resourceMetadata { attrs.append("resource_metadata=\(Challenge.quoted(resourceMetadata))") }
        return attrs.isEmpty ? scheme : "\(scheme) " + attrs.joined(separator: ", ")
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars where u.value >= 0x20 && u.value <= 0x7e {
            if u == "\"" || u == "\\" { out.append("\\") }
            out.unicodeScalars.append(u)
        }
        return out + "\""
    }
}
