public import JOSE

/// A client's metadata document (draft-ietf-oauth-client-id-metadata-document §4), fetched
/// from its `client_id` URL and checked before anything of it is used: a JSON object of at
/// most 5 KB whose `client_id` is exactly the URL it came from, whose `redirect_uris` are each
/// a `RedirectURI`, and that holds no shared secret (a document anyone can read cannot; §4.1).
/// The client is public (`none`, with PKCE) or proves itself with `private_key_jwt` and the
/// keys the document gives (`jwks`) or names (`jwks_uri`, https).
///
/// A client registered here (RFC 7591) is described by the same type, from the metadata it
/// registered: the same rules, but public only (`none`), since nothing vouches for its keys.
public struct ClientIDMetadataDocument: Sendable {
    public let clientID: ClientIdentifier
    public let redirectURIs: [RedirectURI]
    /// What the consent page shows: the document's words, never trusted for anything else.
    public let name: String?
    public let clientURI: String?
    public let authentication: Authentication
    public let grantTypes: Set<String>

    public enum Authentication: Sendable {
        case none
        case privateKeyJWT(keys: JWKSet?, jwksURI: String?)
    }

    /// The most a document may be (the bound; the draft leaves it to the AS, §8.7).
    public static let maxSize = 5 * 1024
    static let grantTypesKnown: Set<String> = [
        "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"
    ]

    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The document `body`, fetched from `url` (the URL the bytes came from: a fetch follows
    /// no redirect, so it is the `client_id` asked for).
    public init(_ body: [UInt8], fetchedFrom url: ClientIDURL) throws(Refusal) {
        guard body.count <= Self.maxSize else { throw Refusal("the document is larger than 5 KB") }
        guard let o = (try? JSONParser.parse(body))?.object else {
            throw Refusal("the document is not a JSON object")
        }
        // §4.1: the document names itself, exactly.
        guard o["client_id"]?.string == url.text else {
            throw Refusal("the document's client_id is not the URL it was fetched from")
        }
        try self.init(o, clientID: .document(url))
    }

    /// A registration request's metadata (RFC 7591 §2), for the id this AS gives it: a public
    /// client (`none`), since no document on a host of its own vouches for keys.
    public init(registration body: [UInt8], clientID: String) throws(Refusal) {
        guard body.count <= Self.maxSize else { throw Refusal("the metadata is larger than 5 KB") }
        guard let o = (try? JSONParser.parse(body))?.object else { throw Refusal("the metadata is not a JSON object") }
        guard o["token_endpoint_auth_method"].map({ $0.string == "none" }) ?? true else {
            throw Refusal("a registered client is public: token_endpoint_auth_method must be none")
        }
        for key in ["jwks", "jwks_uri", "client_id"] where o[key] != nil {
            throw Refusal("a registered client gives no \(key)")
        }
        try self.init(o, clientID: .registered(clientID))
        // The jwt-bearer grant (an ID-JAG) is for clients whose document vouches for their keys.
        guard !grantTypes.contains(AuthorizationServerMetadata.jwtBearer) else {
            throw Refusal("a registered client cannot use the jwt-bearer grant")
        }
    }

    /// What a registered client is kept as: the metadata it was registered with, as checked,
    /// and nothing else the request held.
    public var registeredMetadata: JSONObject {
        var o = JSONObject([
            "redirect_uris": .array(redirectURIs.map { .string($0.text) }),
            "grant_types": .array(grantTypes.sorted().map { .string($0) }),
            "token_endpoint_auth_method": .string("none"),
            "response_types": .array([.string("code")])
        ])
        if let name { o["client_name"] = .string(name) }
        if let clientURI { o["client_uri"] = .string(clientURI) }
        return o
    }

    private init(_ o: JSONObject, clientID: ClientIdentifier) throws(Refusal) {
        // §4.1: no shared secret in a public document.
        for secret in ["client_secret", "client_secret_expires_at"] where o[secret] != nil {
            throw Refusal("the document holds \(secret)")
        }
        guard let uris = o["redirect_uris"]?.array, !uris.isEmpty, uris.count <= 32 else {
            throw Refusal("the document needs redirect_uris: 1 to 32 URIs")
        }
        var redirects: [RedirectURI] = []
        for u in uris {
            guard let s = u.string else { throw Refusal("a redirect_uri is not a string") }
            do {
                redirects.append(try RedirectURI(s))
            } catch {
                throw Refusal(error.rawValue)
            }
        }
        let method = o["token_endpoint_auth_method"].map { $0.string ?? "" } ?? "none"
        switch method {
        case "none":
            authentication = .none
        case "private_key_jwt":
            let keys = try Self.publicKeys(o["jwks"])
            var jwksURI: String?
            if let v = o["jwks_uri"] {
                guard let s = v.string, (try? ClientIDURL(s)) != nil else {
                    throw Refusal("the document's jwks_uri is not an https URL with a path")
                }
                jwksURI = s
            }
            guard (keys == nil) != (jwksURI == nil) else {
                throw Refusal("private_key_jwt needs jwks or jwks_uri, one of them")
            }
            authentication = .privateKeyJWT(keys: keys, jwksURI: jwksURI)
        default:
            // §4.1: a shared-secret method, or one this AS does not offer.
            throw Refusal("token_endpoint_auth_method must be none or private_key_jwt")
        }
        var grants = Set(["authorization_code"])
        if let g = o["grant_types"] {
            guard let list = g.array?.compactMap(\.string), list.count == g.array?.count, !list.isEmpty,
                list.allSatisfy(Self.grantTypesKnown.contains)
            else {
                throw Refusal("grant_types must list authorization_code, refresh_token or the jwt-bearer grant")
            }
            grants = Set(list)
        }
        if let r = o["response_types"], r.array?.compactMap(\.string) != ["code"] {
            throw Refusal("response_types must be [code]")
        }
        self.clientID = clientID
        redirectURIs = redirects
        name = Self.text(o["client_name"], limit: 120)
        clientURI = Self.text(o["client_uri"], limit: 512).flatMap { $0.hasPrefix("https://") ? $0 : nil }
        grantTypes = grants
    }

    /// The registered redirect URI an authorization request names, if it is one.
    public func redirectURI(matching requested: String) -> RedirectURI? {
        redirectURIs.first { $0.matches(requested) }
    }

    /// A display string: printable, cut to `limit` characters. No control character (C0, DEL,
    /// C1) and no format character (bidi overrides and isolates, zero-width joiners: Unicode
    /// category Cf), which could make the name seem to say another host than the one beside it.
    static func text(_ value: JSONValue?, limit: Int) -> String? {
        guard let s = value?.string else { return nil }
        let printable = String(
            s.unicodeScalars.filter {
                $0.value >= 0x20 && !(0x7f...0x9f).contains($0.value) && $0.properties.generalCategory != .format
            }.prefix(limit))
        return printable.isEmpty ? nil : printable
    }

    /// `jwks`: public keys only, at most 8.
    static func publicKeys(_ value: JSONValue?) throws(Refusal) -> JWKSet? {
        guard let value else { return nil }
        guard let keys = value.object?["keys"]?.array, !keys.isEmpty, keys.count <= 8 else {
            throw Refusal("the document's jwks needs 1 to 8 keys")
        }
        var set: [JWK] = []
        for k in keys {
            guard let o = k.object else { throw Refusal("a jwks key is not an object") }
            // A private member in a public document is a leaked key, not one to trust.
            for member in ["d", "p", "q", "dp", "dq", "qi", "k"] where o[member] != nil {
                throw Refusal("a jwks key has private or symmetric material")
            }
            guard let key = try? JWK(object: o) else { throw Refusal("a jwks key cannot be read") }
            set.append(key)
        }
        return JWKSet(keys: set)
    }
}
