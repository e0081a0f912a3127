public import JOSE

/// Entry points for fuzzing the authorization server's parsing of what clients send (the
/// libFuzzer target `ASFuzz` in `fuzz/`; the corpus replay test calls the same): a
/// `client_id` URL with a redirect URI and the request's, a client metadata document as
/// fetched, an ID-JAG's claims signed with the IdP's key (so every claim rule is reached), a
/// refresh token as presented, an authorization request's query, and a registration's
/// metadata. They return normally on every input; a failed
/// `fuzzInvariant` is a finding.
public enum ASFuzzEntry {
    static let idpKey = try! JWK.generate(for: .ES256, kid: "fuzz-idp")
    static let expectations = IdentityAssertionGrant.Expectations(
        asIssuer: "https://gw.example", resources: ["https://gw.example/mcp"], clientID: "https://app.example/c.json",
        issuers: ["https://idp.example": (JWKSet(keys: [try! JWK(object: idpKey.publicJWK())]), [.ES256])])
    static let documentURL = try! ClientIDURL("https://app.example/c.json")
    static let now: Int64 = 1_800_000_000

    /// The first byte chooses (its high bit is the ID-JAG's `typ`); the rest is the input.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let rest = Array(data.dropFirst())
        switch (first & 0x7f) % 6 {
        case 0: urls(String(decoding: rest, as: UTF8.self))
        case 1: document(rest)
        case 2: identityAssertion(rest, typ: first & 0x80 == 0 ? IdentityAssertionGrant.type : "JWT")
        case 3: refreshToken(String(decoding: rest, as: UTF8.self))
        case 4: authorizationRequest(String(decoding: rest, as: UTF8.self))
        default: registration(rest)
        }
    }

    /// An authorization request's query: whatever passes both steps names a client, a redirect
    /// URI given once, an S256 challenge and one of the resources; the answer's URL built from
    /// it holds no CR, LF or space (it goes in a `Location` field).
    static func authorizationRequest(_ query: String) {
        guard let pairs = FormEncoding.decode(Substring(query)),
            case .success(let target) = AuthorizationRequest.target(pairs)
        else { return }
        fuzzInvariant(pairs.filter { $0.0 == "redirect_uri" }.count == 1, "a redirect_uri given twice passed")
        guard let r = try? AuthorizationRequest(target, resources: ["https://gw.example/mcp"]) else { return }
        fuzzInvariant(r.resource == "https://gw.example/mcp", "another resource passed")
        fuzzInvariant(
            r.codeChallenge.utf8.count == 43 && pairs.contains { $0 == ("code_challenge_method", "S256") },
            "a request without an S256 challenge passed")
        fuzzInvariant((r.state?.utf8.count ?? 0) <= AuthorizationRequest.maxState, "a long state passed")
        // Only a redirect URI a document lists is answered to; the answer is built for those.
        guard (try? RedirectURI(r.redirectURI)) != nil else { return }
        let location = AuthorizationRequest.response(
            to: r.redirectURI, [("code", "c"), ("state", r.state ?? ""), ("iss", "https://gw.example")])
        fuzzInvariant(
            !location.utf8.contains { $0 == 0x0d || $0 == 0x0a || $0 == 0x20 }, "an answer URL holds CR, LF or space")
    }

    /// A registration's metadata: whatever passes is a public client with redirect URIs and no
    /// secret, keys or id of its own.
    static func registration(_ bytes: [UInt8]) {
        guard let d = try? ClientIDMetadataDocument(registration: bytes, clientID: "tg-dcr-AAAAAAAAAAAAAAAAAAAAAA")
        else { return }
        fuzzInvariant(!d.redirectURIs.isEmpty, "a registration without redirect URIs passed")
        guard case .none = d.authentication else { return fuzzInvariant(false, "a registered client with keys") }
        let o = (try? JSONParser.parse(bytes))?.object
        fuzzInvariant(
            o?["client_secret"] == nil && o?["jwks"] == nil && o?["client_id"] == nil,
            "a registration with a secret, keys or its own id passed")
    }

    /// Lines: a client_id, a redirect URI, a requested redirect URI.
    static func urls(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let id = try? ClientIDURL(lines[0]) {
            // A path may hold "@" (RFC 3986 pchar); the host never.
            fuzzInvariant(
                id.text.hasPrefix("https://") && !id.text.contains("#") && !id.host.contains("@"),
                "a client_id with another scheme, a fragment or userinfo passed")
            fuzzInvariant(
                id.host.utf8.allSatisfy { c in
                    (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2e || c == 0x3a
                }, "a client_id's host holds a character no host name has")
            fuzzInvariant(!id.path.split(separator: "/").contains { $0 == ".." || $0 == "." }, "a dot segment passed")
        }
        guard lines.count >= 3, let registered = try? RedirectURI(lines[1]) else { return }
        let scheme = registered.text.prefix { $0 != ":" }.lowercased()
        fuzzInvariant(!RedirectURI.forbiddenSchemes.contains(scheme), "a redirect URI with scheme \(scheme) passed")
        fuzzInvariant(!registered.text.contains("#"), "a redirect URI with a fragment passed")
        if registered.matches(lines[2]), lines[2] != registered.text {
            // Only a loopback redirect matches another string, and only on another port.
            // The scheme's case is no difference (RFC 3986 §3.1): "httP" is http.
            fuzzInvariant(
                registered.isLoopback && lines[2].lowercased().hasPrefix("http://"),
                "a non-loopback redirect matched loosely")
        }
    }

    /// A document as fetched from the client_id: whatever passes names itself, has redirect
    /// URIs, and holds no secret.
    static func document(_ bytes: [UInt8]) {
        guard let d = try? ClientIDMetadataDocument(bytes, fetchedFrom: documentURL) else { return }
        fuzzInvariant(bytes.count <= ClientIDMetadataDocument.maxSize, "a document over 5 KB passed")
        fuzzInvariant(!d.redirectURIs.isEmpty, "a document without redirect URIs passed")
        let o = (try? JSONParser.parse(bytes))?.object
        fuzzInvariant(o?["client_id"]?.string == documentURL.text, "a document naming another client passed")
        fuzzInvariant(o?["client_secret"] == nil, "a document with a secret passed")
    }

    /// `bytes` as an ID-JAG's claims signed with the IdP's key: whatever passes is for this
    /// AS, one of its resources and the client, with a subject, a jti and a short life.
    static func identityAssertion(_ bytes: [UInt8], typ: String) {
        guard let claims = try? JSONParser.parse(bytes).object,
            let token = try? JWSSigner.sign(
                claims: claims, header: JSONObject(["typ": .string(typ)]), alg: .ES256, key: idpKey)
        else { return }
        guard let g = try? IdentityAssertionGrant(token, expecting: expectations, now: now) else { return }
        fuzzInvariant(typ == IdentityAssertionGrant.type, "an assertion typed \(typ) passed")
        fuzzInvariant(
            g.resource == "https://gw.example/mcp" && g.clientID == expectations.clientID,
            "another resource or client passed")
        fuzzInvariant(!g.jti.isEmpty && !g.subject.isEmpty, "an assertion without jti or sub passed")
        fuzzInvariant(
            g.expiresAt > now - 30 && g.expiresAt <= now + 30 + IdentityAssertionGrant.maxLifetime,
            "an expired or long-lived assertion passed")
    }

    static func refreshToken(_ text: String) {
        guard let t = RefreshTokenFamily.Token(text) else { return }
        fuzzInvariant(t.text == text, "a refresh token read as another")
    }
}
