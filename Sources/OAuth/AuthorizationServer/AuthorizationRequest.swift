import JOSE

/// An authorization request to this AS (RFC 6749 §4.1.1), read in the two steps §4.1.2.1
/// sets apart. First the client and its redirect URI (`Target`): while either is in doubt
/// the answer is a page, never a redirect, for a redirect to an unchecked URI is an open
/// redirector (RFC 9700 §4.11). Then, once the client's metadata document names that
/// redirect URI, the rest, whose errors go back to the client there.
public struct AuthorizationRequest: Sendable, Equatable {
    public let clientID: ClientIdentifier
    public let redirectURI: String
    public let state: String?
    /// RFC 7636 §4.3, S256 only (OAuth 2.1 §4.1.1: the AS refuses `plain`).
    public let codeChallenge: String
    /// RFC 8707 §2: the one resource the token is for.
    public let resource: String
    /// The scopes asked for; nil: every scope the user may have on the resource.
    public let scopes: [String]?
    /// RFC 9449 §10: the key the code is bound to.
    public let dpopJKT: String?

    /// What names the client and where it wants the answer.
    public struct Target: Sendable, Equatable {
        public let clientID: ClientIdentifier
        public let redirectURI: String
        /// Every parameter of the request, each once.
        public let parameters: [String: String]
    }

    /// The first step: the parameters, each at most once (§3.1), a `client_id` that is a
    /// metadata document URL, and a `redirect_uri`. The error is for the page.
    public static func target(_ pairs: [(String, String)]) -> Result<Target, PageError> {
        var params: [String: String] = [:]
        for (name, value) in pairs {
            guard params[name] == nil else {
                return .failure(PageError("the parameter \(name.prefix(40)) is given twice"))
            }
            params[name] = value
        }
        guard let id = params["client_id"] else { return .failure(PageError("client_id is missing")) }
        guard let client = ClientIdentifier(id) else {
            return .failure(PageError("client_id is not a client metadata document URL or a client registered here"))
        }
        // The metadata document lists the URIs; which one is meant is said every time (OAuth
        // 2.1 §4.1.1, and the MCP authorization spec).
        guard let redirect = params["redirect_uri"], !redirect.isEmpty, redirect.utf8.count <= RedirectURI.maxLength
        else {
            return .failure(PageError("redirect_uri is missing"))
        }
        return .success(Target(clientID: client, redirectURI: redirect, parameters: params))
    }

    public struct PageError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Longest `state` taken: it comes back in a URL.
    public static let maxState = 1024

    /// The second step: everything else, for a target whose redirect URI the client's document
    /// lists. `resources`: those this AS issues tokens for. The error goes to the redirect URI.
    public init(_ target: Target, resources: Set<String>) throws(TokenEndpointError) {
        let p = target.parameters
        if let s = p["state"], s.utf8.count > Self.maxState {
            throw .invalidRequest("state is longer than \(Self.maxState) bytes")
        }
        guard p["response_type"] == "code" else {
            throw TokenEndpointError("unsupported_response_type", "response_type must be code")
        }
        if let mode = p["response_mode"], mode != "query" {
            throw .invalidRequest("response_mode must be query")
        }
        // RFC 9101 and RFC 9126 are this gateway's as a client, not offered by its AS.
        if p["request"] != nil || p["request_uri"] != nil {
            throw TokenEndpointError("request_not_supported", "request objects are not supported here")
        }
        guard let challenge = p["code_challenge"] else {
            throw .invalidRequest("code_challenge is required (PKCE, S256)")
        }
        guard p["code_challenge_method"] == "S256" else {
            throw .invalidRequest("code_challenge_method must be S256")
        }
        // §4.2: base64url of 32 bytes.
        guard challenge.utf8.count == 43, Base64URL.decode(challenge)?.count == 32 else {
            throw .invalidRequest("code_challenge is not an S256 challenge")
        }
        guard let resource = p["resource"] else {
            throw TokenEndpointError("invalid_target", "resource is required: the MCP server the token is for")
        }
        guard resources.contains(resource) else {
            throw TokenEndpointError("invalid_target", "the resource is not one this server issues tokens for")
        }
        var scopes: [String]?
        if let s = p["scope"] {
            let list = s.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard !list.isEmpty, list.count <= 64, list.allSatisfy(Self.isScopeToken) else {
                throw TokenEndpointError("invalid_scope", "scope is not a list of scope tokens")
            }
            scopes = list
        }
        if let jkt = p["dpop_jkt"], jkt.utf8.count != 43 || Base64URL.decode(jkt)?.count != 32 {
            throw .invalidRequest("dpop_jkt is not a SHA-256 JWK thumbprint")
        }
        clientID = target.clientID
        redirectURI = target.redirectURI
        state = p["state"]
        codeChallenge = challenge
        self.resource = resource
        self.scopes = scopes
        dpopJKT = p["dpop_jkt"]
    }

    /// RFC 6749 §3.3's scope-token.
    public static func isScopeToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 128
            && s.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5b).contains($0) || (0x5d...0x7e).contains($0) }
    }

    /// The client's redirect URI with the answer's parameters (RFC 6749 §4.1.2, RFC 9207 §2:
    /// `iss` beside the code, so a client talking to several servers knows whose it is).
    public static func response(to redirectURI: String, _ parameters: [(String, String)]) -> String {
        let query = parameters.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }
            .joined(separator: "&")
        return redirectURI + (redirectURI.contains("?") ? "&" : "?") + query
    }
}
