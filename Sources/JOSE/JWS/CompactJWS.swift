import Glibc

/// A compact-serialized JWS (RFC 7515 §7.1), parsed strictly: size limit first, exactly
/// three parts, each canonical base64url, a header that is a JSON object without duplicate
/// members and with a known `alg`. Parsing does not verify; `JWSVerifier` does.
public struct CompactJWS: Sendable {
    public static let defaultMaxSize = 16 * 1024

    public let header: JWSHeader
    public let payload: [UInt8]
    public let signature: [UInt8]
    /// The token as given: its first `signingInputCount` bytes, ASCII(BASE64URL(header) ||
    /// '.' || BASE64URL(payload)), are what the signature covers (read in place, not copied).
    let token: String
    let signingInputCount: Int
    /// The length of BASE64URL(header), before the first '.'.
    let encodedHeaderCount: Int
    /// The header came from the caller's `knownHeader`, not from parsing here.
    let headerWasKnown: Bool

    public init(_ token: String, maxSize: Int = CompactJWS.defaultMaxSize) throws {
        try self.init(token, maxSize: maxSize, knownHeader: nil)
    }

    /// As `init(_:maxSize:)`, except that a protected header whose exact base64url bytes
    /// `knownHeader` recognizes is taken as given instead of decoded, parsed and checked
    /// again: the caller vouches that it got that header from this parser for those bytes.
    public init(
        _ token: String, maxSize: Int = CompactJWS.defaultMaxSize,
        knownHeader: ((UnsafeRawBufferPointer) -> JWSHeader?)?
    ) throws {
        var token = token
        guard token.utf8.count <= maxSize else {
            throw JOSEError(.tooLarge, "the token is larger than \(maxSize) bytes")
        }
        // Filled in by the closure (locals, not a returned tuple: each copy of a tuple of
        // arrays is retains and releases).
        var known: JWSHeader?
        var headerObject: JSONObject?
        var payloadBytes: [UInt8] = []
        var signatureBytes: [UInt8] = []
        var dots = (0, 0)
        try token.withUTF8 { buf in
            // memchr: the token is scanned on every request, and most of it is signature.
            func dot(after start: Int) -> Int? {
                guard start < buf.count, let base = buf.baseAddress,
                    let hit = memchr(base + start, Int32(UInt8(ascii: ".")), buf.count - start)
                else { return nil }
                return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            }
            guard let first = dot(after: 0), let second = dot(after: first + 1), dot(after: second + 1) == nil else {
                throw JOSEError(.malformed, "a compact JWS has exactly three parts")
            }
            dots = (first, second)
            let h = UnsafeBufferPointer(rebasing: buf[0..<dots.0])
            let p = UnsafeBufferPointer(rebasing: buf[(dots.0 + 1)..<dots.1])
            let s = UnsafeBufferPointer(rebasing: buf[(dots.1 + 1)...])
            guard !h.isEmpty else { throw JOSEError(.malformed, "empty header") }
            known = knownHeader?(UnsafeRawBufferPointer(h))
            var hb: [UInt8] = []
            if known == nil {
                guard let decoded = Base64URL.decode(bytes: h) else {
                    throw JOSEError(.malformed, "the header is not canonical base64url")
                }
                hb = decoded
            }
            guard let pb = Base64URL.decode(bytes: p) else {
                throw JOSEError(.malformed, "the payload is not canonical base64url")
            }
            guard let sb = Base64URL.decode(bytes: s) else {
                throw JOSEError(.malformed, "the signature is not canonical base64url")
            }
            if known == nil { headerObject = try JSONParser.parseObject(hb, what: "the JWS header") }
            payloadBytes = pb
            signatureBytes = sb
        }
        if let known {
            header = known
        } else {
            header = try JWSHeader(object: headerObject ?? JSONObject())
        }
        headerWasKnown = known != nil
        // Checked after the header, so an unsecured JWS (RFC 7515 §A.5: alg "none", empty
        // signature) is reported as the algorithm it asks for, not as a formatting slip.
        guard !signatureBytes.isEmpty else { throw JOSEError(.malformed, "empty signature") }
        payload = payloadBytes
        signature = signatureBytes
        self.token = token
        signingInputCount = dots.1
        encodedHeaderCount = dots.0
    }

    /// The protected header as sent (its base64url text): two proofs with the same bytes here
    /// carry the same key.
    public var encodedHeader: ArraySlice<UInt8> {
        Array(token.utf8.prefix(encodedHeaderCount))[...]
    }

    /// Runs `body` over ASCII(BASE64URL(header) || '.' || BASE64URL(payload)), in place.
    func withSigningInput<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        var token = token
        let n = signingInputCount
        return try token.withUTF8 { try body(UnsafeBufferPointer(rebasing: $0[0..<n])) }
    }

    /// The payload as a JSON object (a JWT claims set). A header with `cty: JWT` says the
    /// payload is itself a JWT, nested (RFC 7519 §5.2): tokengate takes no nested JWTs, and a
    /// claims set under that header is not what its signer described, so either way it is
    /// refused rather than read as claims.
    public func claims() throws -> JSONObject {
        if let cty = header.cty, JWSHeader.typesMatch(cty, "JWT") {
            throw JOSEError(.malformed, claim: "cty", "cty JWT marks a nested JWT, which is not accepted")
        }
        return try JSONParser.parseObject(payload, what: "the JWT claims set")
    }
}

/// Verifies compact JWSs against a key set and an algorithm allow-list.
public struct JWSVerifier: Sendable {
    public let keys: JWKSet
    public let algorithms: Set<JWSAlgorithm>

    public init(keys: JWKSet, algorithms: Set<JWSAlgorithm>) {
        self.keys = keys
        self.algorithms = algorithms
    }

    /// Returns the key that verified `jws`, or throws why not.
    @discardableResult
    public func verify(_ jws: CompactJWS) throws -> JWK {
        let alg = jws.header.alg
        guard algorithms.contains(alg) else {
            throw JOSEError(.algorithmNotAllowed, claim: "alg", "\(alg) is not allowed here")
        }
        let key = try keys.key(for: alg, kid: jws.header.kid)
        try JWSVerifier.check(jws, with: key)
        return key
    }

    /// Verifies with one given key (e.g. a DPoP proof's own `jwk`, by RFC 9449's explicit
    /// rule — never for access tokens). The algorithm must still be allowed and fit the key.
    public static func verify(_ jws: CompactJWS, embeddedKey key: JWK, algorithms: Set<JWSAlgorithm>) throws {
        guard algorithms.contains(jws.header.alg) else {
            throw JOSEError(.algorithmNotAllowed, claim: "alg", "\(jws.header.alg) is not allowed here")
        }
        try key.checkUsable(for: jws.header.alg)
        try check(jws, with: key)
    }

    static func check(_ jws: CompactJWS, with key: JWK) throws {
        let ok = try jws.withSigningInput { try key.verify(jws.header.alg, message: $0, signature: jws.signature) }
        guard ok else { throw JOSEError(.badSignature, "the signature does not verify") }
    }
}

/// Produces compact JWSs.
public enum JWSSigner {
    /// Signs `payload` with `key`; `header` gets `alg` (and `kid` if the key has one and the
    /// header does not).
    public static func sign(payload: [UInt8], header: JSONObject = JSONObject(), alg: JWSAlgorithm, key: JWK) throws
        -> String
    {
        var h = JSONObject()
        h["alg"] = .string(alg.rawValue)
        for name in header.names where name != "alg" { h[name] = header[name] }
        if h["kid"] == nil, let kid = key.kid { h["kid"] = .string(kid) }
        let input = Base64URL.encode(JSONSerializer.serialize(.object(h))) + "." + Base64URL.encode(payload)
        let sig = try key.sign(alg, message: Array(input.utf8))
        return input + "." + Base64URL.encode(sig)
    }

    public static func sign(claims: JSONObject, header: JSONObject = JSONObject(), alg: JWSAlgorithm, key: JWK) throws
        -> String
    {
        try sign(payload: Array(JSONSerializer.serialize(.object(claims)).utf8), header: header, alg: alg, key: key)
    }
}
