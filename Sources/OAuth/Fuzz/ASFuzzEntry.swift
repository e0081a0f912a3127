public import JOSE

/// Entry points for fuzzing the authorization server's parsing of what clients send (the
/// libFuzzer target `ASFuzz` in `fuzz/`; the corpus replay test calls the same): a
/// `client_id` URL with a redirect URI and the request's, a client metadata document as
/// fetched, an ID-JAG's claims signed with the IdP's key (so every claim rule is reached), and
/// a refresh token as presented. They return normally on every input; a failed
/// `fuzzInvariant` is a finding.
public enum ASFuzzEntry {
    static let idpKey = try! JWK.generate(for: .ES256, kid: "fuzz-idp")
    static let expectations = IdentityAssertionGrant.Expectations(
        asIssuer: "https://gw.example", resources: ["https://gw.example/mcp"], clientID: "https://app.example/c.json",
        issuers: ["https://idp.example": (JWKSet(keys: [try! JWK(object: idpKey.publicJWK())]), [.ES256])])
    static let documentURL = try! ClientIDURL("https://app.example/c.json")
    static let now: Int64 = 1_800_000_000

    /// The first byte chooses; the rest is the input.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let rest = Array(data.dropFirst())
        switch first % 4 {
        case 0: urls(String(decoding: rest, as: UTF8.self))
        case 1: document(rest)
        case 2: identityAssertion(rest, typ: first & 0x80 == 0 ? IdentityAssertionGrant.type : "JWT")
        default: refreshToken(String(decoding: rest, as: UTF8.self))
        }
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
            fuzzInvariant(
                registered.isLoopback && lines[2].hasPrefix("http://"), "a non-loopback redirect matched loosely")
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
