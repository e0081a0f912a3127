public import JOSE

/// RFC 9449 §4.3 proof validation, as a policy value with an injected clock. Replay (jti) is
/// the caller's, since it needs shared state; everything else is here, in the RFC's order.
public struct DPoPProofVerifier: Sendable {
    /// Asymmetric algorithms only (§4.3 check 5); the route's allow-list.
    public var algorithms: Set<JWSAlgorithm> = [.ES256, .ES384, .PS256, .RS256, .EdDSA]
    /// Accepted |now − iat| in seconds, before leeway (§4.3 check 11; §11.1).
    public var window: Int64 = 60
    public var leeway: Int64 = 5
    public var maxSize = 8 * 1024
    /// When set, every proof must carry a valid server nonce (§8, §9), checked in addition to
    /// `iat` (§4.3 check 11 allows either; both bound a stolen proof more tightly).
    public var nonces: DPoPNonces?

    public init() {}

    public struct Request: Sendable {
        public var method: String
        /// The request's target URI as the client addressed it (its query and fragment are ignored).
        public var uri: String
        /// The access token sent with the proof, if any (then `ath` is required, §4.3 check 12).
        public var accessToken: String?
        public var now: Int64
        /// The router's path normalization, applied to the `htu` claim's path so that it is
        /// compared with the request's path in the same form.
        public var normalizePath: (@Sendable (String) -> String?)?

        public init(
            method: String, uri: String, accessToken: String?, now: Int64,
            normalizePath: (@Sendable (String) -> String?)? = nil
        ) {
            self.method = method
            self.uri = uri
            self.accessToken = accessToken
            self.now = now
            self.normalizePath = normalizePath
        }
    }

    /// - keyCache: this loop's cache of proof keys already imported (see `DPoPKeyCache`).
    public func verify(_ proof: String, request: Request, keyCache: DPoPKeyCache? = nil) throws(DPoPProofError)
        -> DPoPProof
    {
        func invalid(_ reason: String, _ cause: JOSEError? = nil) -> DPoPProofError {
            DPoPProofError(.invalidProof, reason, cause: cause)
        }
        let jws: CompactJWS
        let claims: JSONObject
        // A header seen before (same bytes) comes back parsed, with its key imported and
        // check 7 passed: all three are functions of those bytes alone.
        var cached: DPoPKeyCache.Entry?
        do {
            // Check 2: a well-formed compact JWS.
            if let keyCache {
                jws = try CompactJWS(
                    proof, maxSize: maxSize,
                    knownHeader: { bytes in
                        cached = keyCache.get(bytes)
                        return cached?.header
                    })
            } else {
                jws = try CompactJWS(proof, maxSize: maxSize)
            }
            claims = try jws.claims()
        } catch let e as JOSEError {
            throw invalid("the DPoP proof is not a well-formed JWT", e)
        } catch { throw invalid("the DPoP proof is not a well-formed JWT") }
        // Check 4: typ.
        guard let typ = jws.header.typ, JWSHeader.typesMatch(typ, "dpop+jwt") else {
            throw invalid("the DPoP proof's typ is not dpop+jwt")
        }
        // Check 5: an asymmetric algorithm on the allow-list.
        guard !jws.header.alg.isSymmetric, algorithms.contains(jws.header.alg) else {
            throw invalid("the DPoP proof's algorithm is not accepted")
        }
        var jwkObject = JSONObject()
        if cached == nil {
            jwkObject = try Self.checkPublicKey(jws.header)
        }
        // Check 3: required claims, of the right types.
        guard let jti = claims[Names.jti]?.string, !jti.isEmpty, jti.utf8.count <= 256 else {
            throw invalid("the DPoP proof needs a jti")
        }
        guard let htm = claims[Names.htm]?.string else { throw invalid("the DPoP proof needs htm") }
        guard let htu = claims[Names.htu]?.string else { throw invalid("the DPoP proof needs htu") }
        guard let iat = claims[Names.iat]?.int64 else { throw invalid("the DPoP proof needs a numeric iat") }
        // Check 10 before the signature: asking for a nonce costs nothing, a signature check does.
        let nonceValue = claims[Names.nonce]
        let nonce = nonceValue?.string
        var nonceVerdict: DPoPNonces.Verdict?
        if let nonces {
            guard let nonce else { throw DPoPProofError(.useNonce, "a DPoP nonce is required") }
            let v = nonces.check(nonce, now: request.now)
            guard v != .invalid else { throw DPoPProofError(.useNonce, "the DPoP nonce is not valid or has expired") }
            nonceVerdict = v
        } else if nonceValue != nil && nonce == nil {
            throw invalid("the DPoP proof's nonce is not a string")
        }
        // Check 6: the signature verifies with the proof's own key (RFC 9449's explicit rule).
        let key: JWK
        let jkt: String
        do {
            if let cached {
                (key, jkt) = (cached.key, cached.jkt)
            } else {
                // Prepared to verify this proof's algorithm only (a key of another type or
                // curve gets no context and is refused by `checkUsable` below, as before).
                key = try JWK(object: jwkObject, verifying: jws.header.alg)
                jkt = key.thumbprint()
                keyCache?.put(jws.encodedHeader, .init(header: jws.header, key: key, jkt: jkt))
            }
            try JWSVerifier.verify(jws, embeddedKey: key, algorithms: algorithms)
        } catch let e as JOSEError {
            throw invalid(
                e.code == .badSignature
                    ? "the DPoP proof's signature does not verify" : "the DPoP proof's jwk is not a usable public key",
                e)
        } catch { throw invalid("the DPoP proof's signature does not verify") }
        // Check 8: method.
        guard htm == request.method else { throw invalid("the DPoP proof's htm does not match the request method") }
        // Check 9: URI without query and fragment, compared in normal form.
        guard let want = HTU.normalize(requestURI: request.uri),
            let got = HTU.normalize(htu, normalizePath: request.normalizePath), want == got
        else {
            throw invalid("the DPoP proof's htu does not match the request URI")
        }
        // Check 11: fresh by iat — and, where the server requires nonces, by the nonce too:
        // a proof stolen with a valid nonce is then good for the iat window, not the nonce's
        // whole lifetime.
        let slack = window + leeway
        guard iat <= request.now + slack else { throw invalid("the DPoP proof's iat is in the future") }
        guard iat >= request.now - slack else { throw invalid("the DPoP proof is too old") }
        var acceptableUntil = iat + slack
        var stale = false
        if case .valid(_, let expiresAt, let isStale)? = nonceVerdict {
            acceptableUntil = min(acceptableUntil, expiresAt)
            stale = isStale
        }
        // Check 12: ath binds the proof to the access token.
        if let token = request.accessToken {
            guard let ath = claims[Names.ath]?.string else {
                throw invalid("the DPoP proof needs ath with an access token")
            }
            let expected = Base64URL.encode(Digest.sha256.hash(utf8: token))
            guard ConstantTime.equals(ath, expected) else {
                throw invalid("the DPoP proof's ath does not match the access token")
            }
        }
        return DPoPProof(
            jkt: jkt, jti: jti, iat: iat, nonce: nonce, acceptableUntil: acceptableUntil, nonceIsStale: stale)
    }

    /// The proof claims read on every request, prepared for lookups once.
    private enum Names {
        static let jti = JSONObject.Name("jti")
        static let htm = JSONObject.Name("htm")
        static let htu = JSONObject.Name("htu")
        static let iat = JSONObject.Name("iat")
        static let nonce = JSONObject.Name("nonce")
        static let ath = JSONObject.Name("ath")
    }

    /// Check 7: the `jwk` header is a public key (no private or symmetric members), of a size
    /// that bounds what a refused request costs. Returns it.
    private static func checkPublicKey(_ header: JWSHeader) throws(DPoPProofError) -> JSONObject {
        func invalid(_ reason: String) -> DPoPProofError { DPoPProofError(.invalidProof, reason) }
        guard let jwkObject = header.object["jwk"]?.object else {
            throw invalid("the DPoP proof has no jwk header")
        }
        for member in ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] where jwkObject[member] != nil {
            throw invalid("the DPoP proof's jwk contains a private key")
        }
        // A client picks its own proof key, so its size is the attacker's choice: RSA keys of
        // 16384 bits with a 64-bit exponent would make every refused request cost
        // milliseconds. Proof keys: RSA at most 4096 bits, e = 65537 (RFC 8017's common choice).
        if jwkObject["kty"]?.string == "RSA" {
            guard jwkObject["e"]?.string == "AQAB", let n = jwkObject["n"]?.string, n.utf8.count <= 683 else {
                throw invalid("the DPoP proof's RSA key must be at most 4096 bits with exponent 65537")
            }
        }
        return jwkObject
    }
}
