public import JOSE

/// How the gateway authenticates as an OAuth client at the authorization server's
/// endpoints (token, PAR, introspection, revocation): RFC 6749 §2.3.1
/// (client_secret_basic / client_secret_post) and RFC 7523 §2.2 assertions
/// (client_secret_jwt with HS256, private_key_jwt with the client's key), and RFC 8705 §2
/// mutual TLS (the certificate the connection presents authenticates; the request names the
/// client only). An assertion someone else issues (RFC 7523 §2.2: a workload identity's
/// federated token) comes from a `ClientAssertionSource`.
public enum ClientAuthentication: Sendable {
    case clientSecretBasic(clientID: String, secret: String)
    case clientSecretPost(clientID: String, secret: String)
    case clientSecretJWT(clientID: String, secret: String)
    case privateKeyJWT(clientID: String, key: JWK, alg: JWSAlgorithm)
    /// RFC 8705 §2.1: a certificate from a CA the AS trusts, with the registered subject.
    case tlsClientAuth(clientID: String)
    /// RFC 8705 §2.2: a self-signed certificate the client registered (in its JWKS, `x5c`).
    case selfSignedTLSClientAuth(clientID: String)
    /// RFC 7523 §2.2: a JWT issued and rotated by someone else (a projected service-account
    /// token), sent as it is.
    case clientAssertion(clientID: String, source: any ClientAssertionSource)

    public var clientID: String {
        switch self {
        case .clientSecretBasic(let id, _), .clientSecretPost(let id, _), .clientSecretJWT(let id, _),
            .privateKeyJWT(let id, _, _), .tlsClientAuth(let id), .selfSignedTLSClientAuth(let id),
            .clientAssertion(let id, _):
            id
        }
    }

    /// The request parts that authenticate one request to `endpoint`: extra headers and form
    /// parameters. `audience` is what an assertion's `aud` names (the issuer by default —
    /// RFC 7523 §3 allows the issuer or the endpoint URL).
    public func credentials(audience: String, now: Int64) throws -> (headers: [String], form: [(String, String)]) {
        switch self {
        case .clientSecretBasic(let id, let secret):
            // RFC 6749 §2.3.1: both parts form-urlencoded before base64.
            let pair = FormEncoding.encode(id) + ":" + FormEncoding.encode(secret)
            return (["Authorization: Basic " + Base64.standard(Array(pair.utf8))], [])
        case .clientSecretPost(let id, let secret):
            return ([], [("client_id", id), ("client_secret", secret)])
        case .clientSecretJWT(let id, let secret):
            let key = try JWK(json: "{\"kty\":\"oct\",\"k\":\"\(Base64URL.encode(Array(secret.utf8)))\"}")
            return ([], try ClientAssertion.form(clientID: id, audience: audience, key: key, alg: .HS256, now: now))
        case .privateKeyJWT(let id, let key, let alg):
            return ([], try ClientAssertion.form(clientID: id, audience: audience, key: key, alg: alg, now: now))
        case .tlsClientAuth(let id), .selfSignedTLSClientAuth(let id):
            // RFC 8705 §2: client_id is required, the certificate does the rest.
            return ([], [("client_id", id)])
        case .clientAssertion(let id, let source):
            return ([], ClientAssertion.form(clientID: id, assertion: try source.assertion(now: now)))
        }
    }
}

/// Where a client assertion issued by someone else comes from (RFC 7523 §2.2), read when a
/// request is made.
public protocol ClientAssertionSource: Sendable {
    /// The assertion to send now. Throws, rather than answering one that has expired or could
    /// not be read: a request with a stale assertion is never sent.
    func assertion(now: Int64) throws -> String
}

/// An RFC 7523 client assertion: iss = sub = client_id, aud, a unique jti, a short life.
public enum ClientAssertion {
    public static let lifetime: Int64 = 60

    public static func make(clientID: String, audience: String, key: JWK, alg: JWSAlgorithm, now: Int64) throws
        -> String
    {
        let claims = JSONObject([
            "iss": .string(clientID), "sub": .string(clientID), "aud": .string(audience),
            "jti": .string(Base64URL.encode(SecureRandom.bytes(18))),
            "iat": .number(String(now)), "exp": .number(String(now + lifetime))
        ])
        return try JWSSigner.sign(claims: claims, alg: alg, key: key)
    }

    static func form(clientID: String, audience: String, key: JWK, alg: JWSAlgorithm, now: Int64) throws -> [(
        String, String
    )] {
        form(
            clientID: clientID,
            assertion: try make(clientID: clientID, audience: audience, key: key, alg: alg, now: now))
    }

    /// RFC 7523 §2.2: the assertion and its type; client_id too, which the AS may use to find
    /// the client (RFC 7521 §4.2 allows it).
    static func form(clientID: String, assertion: String) -> [(String, String)] {
        [
            ("client_id", clientID),
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
            ("client_assertion", assertion)
        ]
    }
}

/// application/x-www-form-urlencoded (WHATWG URL §5.2, the form RFC 6749 uses).
public enum FormEncoding {
    public static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            case UInt8(ascii: " "): out += "+"
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(b >> 4)], hex[Int(b & 15)]], as: UTF8.self)
            }
        }
        return out
    }

    public static func body(_ params: [(String, String)]) -> String {
        params.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    /// Name/value pairs of a query string or form body, in order; nil if any percent-escape
    /// is malformed or decodes to invalid UTF-8 (an attacker's input is refused, not guessed at).
    /// Split at the bytes "&" and "=", as every other reader of the same text splits it: an
    /// "=" or "&" followed by a combining mark is one `Character`, but still a separator.
    public static func decode(_ text: Substring) -> [(String, String)]? {
        var out: [(String, String)] = []
        for pair in text.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard let name = unescape(bytes: pair[..<eq]),
                let value = unescape(bytes: pair[(eq == pair.endIndex ? eq : pair.index(after: eq))...])
            else { return nil }
            out.append((name, value))
        }
        return out
    }

    static func unescape(_ s: Substring) -> String? { unescape(bytes: s.utf8) }

    static func unescape<Bytes: Collection<UInt8>>(bytes s: Bytes) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.count)
        var it = s.makeIterator()
        func hex(_ c: UInt8?) -> UInt8? {
            guard let c else { return nil }
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - 55
            default: return nil
            }
        }
        while let c = it.next() {
            switch c {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let hi = hex(it.next()), let lo = hex(it.next()) else { return nil }
                bytes.append(hi << 4 | lo)
            default: bytes.append(c)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
