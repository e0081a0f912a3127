/// Entry points for fuzzing every parser of untrusted JOSE input (the libFuzzer target in
/// `fuzz/` and the corpus replay test call these). They must return normally on every
/// input: a thrown `JOSEError` is the expected outcome for garbage; a trap is a finding.
/// Besides "no crash", they check invariants whose failure would be a security bug:
/// canonical base64url, JSON that re-serializes to the same value, exports that re-import
/// to the same key, public exports without private members, and sign→verify agreement.
public enum JOSEFuzzEntry {
    /// Fixed verification keys (public halves of RFC 7515 A.3, RFC 8037 A.4 and the PAR
    /// draft's RSA key), so seeds from the fixtures reach a successful verification.
    static let asymmetricKeys: JWKSet = {
        let json = """
            {"keys":[
            {"kty":"RSA","kid":"k2bdc","e":"AQAB","n":"y9Lqv4fCp6Ei-u2-ZCKq83YvbFEk6JMs_pSj76eMkddWRuWX2aBKGHAtKlE5P7_vn__PCKZWePt3vGkB6ePgzAFu08NmKemwE5bQI0e6kIChtt_6KzT5OaaXDFI6qCLJmk51Cc4VYFaxgqevMncYrzaW_50mZ1yGSFIQzLYP8bijAHGVjdEFgZaZEN9lsn_GdWLaJpHrB3ROlS50E45wxrlg9xMncVb8qDPuXZarvghLL0HzOuYRadBJVoWZowDNTpKpk2RklZ7QaBO7XDv3uR7s_sf2g-bAjSYxYUGsqkNA9b3xVW53am_UZZ3tZbFTIh557JICWKHlWj5uzeJXaw"},
            {"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
            ]}
            """
        return fixedSet(json, count: 3)
    }()

    /// RFC 7515 A.1's HMAC key (a set may not mix secret and public keys).
    static let symmetricKeys: JWKSet = fixedSet(
        #"{"keys":[{"kty":"oct","k":"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"}]}"#,
        count: 1)

    private static func fixedSet(_ json: String, count: Int) -> JWKSet {
        guard let set = try? JWKSet(json: json), set.keys.count == count else {
            preconditionFailure("the fuzz entry's fixed key set does not parse")
        }
        return set
    }

    /// A fixed clock (2021-01-01) so runs are reproducible.
    static let now: Int64 = 1_609_459_200

    /// Runs both entry points: a corpus file may be a token or a key document, and the
    /// wrong parser rejects it in a few bytes.
    public static func all(_ data: [UInt8]) {
        jws(data)
        jwk(data)
    }

    /// JWS compact parse + key selection + verify + claims, as an access-token check does;
    /// and the DPoP-style path that verifies with the header's own `jwk`.
    public static func jws(_ data: [UInt8]) {
        let token = String(decoding: data, as: UTF8.self)
        checkSegments(token)
        guard let jws = try? CompactJWS(token) else { return }
        let algorithms = Set(JWSAlgorithm.allCases)
        var policy = JWTClaimsPolicy(issuer: "joe", audiences: ["api"], leeway: 30, type: nil)
        policy.requireExpiry = false
        for keys in [asymmetricKeys, symmetricKeys] {
            _ = try? JWSVerifier(keys: keys, algorithms: algorithms).verify(jws)
            _ = try? JWTVerifier(keys: keys, algorithms: algorithms, policy: policy).verify(token, now: now)
        }
        if let claims = try? jws.claims() {
            checkJSONRoundTrip(.object(claims))
            _ = try? policy.validate(header: jws.header, claims: claims, now: now)
            // A policy the token's own iss/aud/typ satisfy, so the later checks run too.
            let aud = claims["aud"]?.string ?? claims["aud"]?.array?.first?.string
            var own = JWTClaimsPolicy(
                issuer: claims["iss"]?.string, audiences: aud.map { [$0] } ?? [],
                leeway: 30, type: jws.header.typ)
            own.requireExpiry = false
            own.maxAge = 3600
            own.requiredClaims = Array(claims.names.prefix(3))
            _ = try? own.validate(header: jws.header, claims: claims, now: now)
        }
        checkJSONRoundTrip(.object(jws.header.object))
        if let embedded = jws.header.object["jwk"]?.object, let key = try? JWK(object: embedded) {
            checkKey(key)
            _ = try? JWSVerifier.verify(jws, embeddedKey: key, algorithms: algorithms)
        }
    }

    /// JSON, JWK and JWK Set parsing, and the export/thumbprint/sign paths of what parsed.
    public static func jwk(_ data: [UInt8]) {
        // The picker reads without a tree: it must accept what the parser accepts, and pick
        // what the tree holds.
        let picked = try? picker.read(data)
        guard let value = try? JSONParser.parse(data) else {
            fuzzInvariant(picked == nil, "JSONPicker accepted a text the parser refuses")
            return
        }
        fuzzInvariant(picked != nil, "JSONPicker refused a text the parser accepts")
        if let object = value.object, let picked {
            fuzzInvariant(
                picked.values[0] == object["kty"].map(pickedForm) && picked.values[1] == object["keys"].map(pickedForm),
                "JSONPicker picked otherwise than the tree holds")
        }
        checkJSONRoundTrip(value)
        if let object = value.object, let key = try? JWK(object: object) {
            checkKey(key)
        }
        if let set = try? JWKSet(bytes: data) {
            for key in set.keys { checkKey(key) }
            guard case .object(let doc)? = try? JSONParser.parse(set.publicJSON()), let keys = doc["keys"]?.array else {
                preconditionFailure("JWKSet.publicJSON() is not a JSON object with keys")
            }
            for k in keys { checkNoPrivateMembers(k) }
            for alg in JWSAlgorithm.allCases {
                _ = try? set.key(for: alg, kid: nil)
                for kid in set.keys.compactMap(\.kid).prefix(4) { _ = try? set.key(for: alg, kid: kid) }
            }
        }
    }

    static let picker = JSONPicker(paths: [["kty"], ["keys"]])

    /// A value in the picker's terms.
    static func pickedForm(_ value: JSONValue) -> JSONPicker.Picked {
        switch value {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .bool(let b): .bool(b)
        case .null: .null
        case .object: .object
        case .array: .array
        }
    }

    /// Every base64url segment that decodes must be the one canonical encoding of its bytes.
    static func checkSegments(_ token: String) {
        for segment in token.split(separator: ".", omittingEmptySubsequences: false).prefix(5) {
            if let bytes = Base64URL.decode(segment) {
                precondition(Base64URL.encode(bytes) == segment, "base64url decoded a non-canonical segment")
            }
        }
    }

    /// Parsed JSON must serialize to text that parses back to the same value.
    static func checkJSONRoundTrip(_ value: JSONValue) {
        let text = JSONSerializer.serialize(value)
        guard let again = try? JSONParser.parse(text) else {
            preconditionFailure("serialized JSON does not parse: \(text)")
        }
        precondition(again == value, "JSON does not survive a serialize/parse round trip")
    }

    static func checkNoPrivateMembers(_ value: JSONValue) {
        guard let o = value.object else { preconditionFailure("a public JWK export is not an object") }
        for name in ["d", "p", "q", "dp", "dq", "qi", "k", "oth"] {
            precondition(o[name] == nil, "a public JWK export carries the private member \(name)")
        }
    }

    /// A key that parsed: its public export re-imports to the same thumbprint and carries no
    /// private member; a private key's full export re-imports too, and what it signs, its
    /// public half verifies.
    static func checkKey(_ key: JWK) {
        let thumbprint = key.thumbprint()
        let pub = key.publicJWK()
        checkNoPrivateMembers(.object(pub))
        guard key.kty != "oct" else { return }
        guard let reimported = try? JWK(object: pub) else {
            preconditionFailure("a parsed key's public export does not re-import")
        }
        precondition(reimported.thumbprint() == thumbprint, "public export changed the thumbprint")
        precondition(!reimported.isPrivate, "a public export re-imported as private")
        guard key.isPrivate else { return }
        guard let full = try? key.privateJWK(), let again = try? JWK(object: full) else {
            preconditionFailure("a parsed private key's export does not re-import")
        }
        precondition(again.thumbprint() == thumbprint, "private export changed the thumbprint")
        // Signing is slow for big RSA keys; the parse paths above are what is under test.
        if key.kty == "RSA" && key.bits > 4096 { return }
        let message: [UInt8] = Array("fuzz".utf8)
        for alg in JWSAlgorithm.allCases where (try? key.checkUsable(for: alg, operation: "sign")) != nil {
            guard let sig = try? key.sign(alg, message: message) else { continue }
            if (try? reimported.checkUsable(for: alg)) != nil {
                precondition(
                    (try? reimported.verify(alg, message: message, signature: sig)) == true,
                    "a signature by a parsed private key does not verify with its public half")
            }
        }
    }
}
