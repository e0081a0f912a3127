import Foundation
import Testing

@testable import JOSE

/// Keys an attacker (or a careless IdP) publishes: too small, off the curve, the wrong
/// size, private halves that do not belong to their public half, and key sets whose public
/// export would leak secrets.
@Suite("Attacks through JWKs and JWK Sets")
struct AttackKeyTests {
    /// RSA-1024: n and the SPKI PEM of the same key.
    static let rsa1024n =
        "zzqpubGMpo7ereH750aac5052u9qLV3CCIpE3IY1r-nDB_ymgkCtxWsON-YZ3L37ws7YUh4ppNgcVJJuWjwf8UqMMcOJZEsJyxZrF32F5XzLvJ_Op__4osE5fqYjxjd3H6qsghLvq2ymxYUwtB1kfycmRu38I4SucohGJhUJgNM"
    static let rsa1024PEM = """
        -----BEGIN PUBLIC KEY-----
        MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDPOqm5sYymjt6t4fvnRppznTna
        72otXcIIikTchjWv6cMH/KaCQK3Faw435hncvfvCzthSHimk2BxUkm5aPB/xSowx
        w4lkSwnLFmsXfYXlfMu8n86n//iiwTl+piPGN3cfqqyCEu+rbKbFhTC0HWR/JyZG
        7fwjhK5yiEYmFQmA0wIDAQAB
        -----END PUBLIC KEY-----
        """

    @Test("RSA keys under 2048 bits are refused, from JWK, PEM and inside a set")
    func weakRSA() throws {
        expectJOSEError(.weakKey) { _ = try JWK(json: #"{"kty":"RSA","n":"\#(Self.rsa1024n)","e":"AQAB"}"#) }
        expectJOSEError(.weakKey) { _ = try JWK(pem: Self.rsa1024PEM) }
        // A set keeps its other keys but never the weak one; a token naming it finds nothing.
        let good = try JWK.generate(for: .RS256, kid: "good")
        let set = try JWKSet(
            json:
                #"{"keys":[{"kty":"RSA","kid":"weak","n":"\#(Self.rsa1024n)","e":"AQAB"},\#(JSONSerializer.serialize(.object(good.publicJWK())))]}"#
        )
        #expect(set.keys.map(\.kid) == ["good"])
        #expect(set.skipped.map(\.error.code) == [.weakKey])
        let token = try Attack.forge(header: #"{"alg":"RS256","kid":"weak"}"#, payload: "{}", alg: .RS256, key: good)
        expectJOSEError(.keyNotFound) { try JWSVerifier(keys: set, algorithms: [.RS256]).verify(CompactJWS(token)) }
    }

    @Test("RSA public members that no real key has")
    func badRSAMembers() throws {
        let n = try #require(Attack.key(.RS256).publicJWK()["n"]?.string)
        let bytes = try #require(Base64URL.decode(n))
        for (e, why) in [("AQ", "e = 1"), ("Ag", "e = 2"), ("AAEAAQ", "leading zero in e"), ("AQAA", "even e")] {
            expectJOSEError(.invalidKey, "\(why)") { _ = try JWK(json: #"{"kty":"RSA","n":"\#(n)","e":"\#(e)"}"#) }
        }
        expectJOSEError(.invalidKey, "leading zero in n") {
            _ = try JWK(json: #"{"kty":"RSA","n":"\#(Base64URL.encode([0] + bytes))","e":"AQAB"}"#)
        }
        expectJOSEError(.invalidKey, "padded n") { _ = try JWK(json: #"{"kty":"RSA","n":"\#(n)=","e":"AQAB"}"#) }
        expectJOSEError(.invalidKey, "n not a string") { _ = try JWK(json: #"{"kty":"RSA","n":1,"e":"AQAB"}"#) }
    }

    /// A P-256 public key's x and y as bytes.
    static func p256Point() throws -> (x: [UInt8], y: [UInt8]) {
        let pub = Attack.key(.ES256).publicJWK()
        return (
            try #require(pub["x"]?.string.flatMap { Base64URL.decode($0) }),
            try #require(pub["y"]?.string.flatMap { Base64URL.decode($0) })
        )
    }

    static func ecJSON(crv: String = "P-256", x: [UInt8], y: [UInt8], d: [UInt8]? = nil) -> String {
        let dMember = d.map { #","d":"\#(Base64URL.encode($0))""# } ?? ""
        return #"{"kty":"EC","crv":"\#(crv)","x":"\#(Base64URL.encode(x))","y":"\#(Base64URL.encode(y))"\#(dMember)}"#
    }

    @Test("an EC point that is not on its curve (invalid-curve attack)")
    func pointNotOnCurve() throws {
        let (x, y) = try Self.p256Point()
        var y2 = y
        y2[31] ^= 1
        expectJOSEError(.invalidKey, "y altered") { _ = try JWK(json: Self.ecJSON(x: x, y: y2)) }
        expectJOSEError(.invalidKey, "x and y swapped") { _ = try JWK(json: Self.ecJSON(x: y, y: x)) }
        let zero = [UInt8](repeating: 0, count: 32)
        expectJOSEError(.invalidKey, "the origin") { _ = try JWK(json: Self.ecJSON(x: zero, y: zero)) }
        // A valid key still parses (the checks above fail for the reason they name).
        _ = try JWK(json: Self.ecJSON(x: x, y: y))
    }

    @Test("EC coordinates of the wrong length")
    func wrongCoordinateLength() throws {
        let (x, y) = try Self.p256Point()
        for (name, json) in [
            ("x 31 bytes", Self.ecJSON(x: Array(x.dropFirst()), y: y)),
            ("x 33 bytes", Self.ecJSON(x: [0] + x, y: y)),
            ("y 31 bytes", Self.ecJSON(x: x, y: Array(y.dropFirst()))),
            ("y 33 bytes", Self.ecJSON(x: x, y: [0] + y)),
            ("P-256 coordinates labelled P-384", Self.ecJSON(crv: "P-384", x: x, y: y)),
            ("P-256 coordinates labelled P-521", Self.ecJSON(crv: "P-521", x: x, y: y)),
            ("unknown curve", Self.ecJSON(crv: "secp256k1", x: x, y: y)),
            ("d 31 bytes", Self.ecJSON(x: x, y: y, d: [UInt8](repeating: 1, count: 31)))
        ] {
            expectJOSEError(.invalidKey, "\(name)") { _ = try JWK(json: json) }
        }
    }

    @Test("a private part that does not belong to the public part")
    func mismatchedPrivateParts() throws {
        // Ed25519: d of one key, x of another.
        let a = try Attack.key(.EdDSA).privateJWK()
        let b = try JWK.generate(for: .EdDSA, kid: nil).privateJWK()
        var swapped = a
        swapped["x"] = b["x"]
        expectJOSEError(.invalidKey, "Ed25519 d/x") { _ = try JWK(object: swapped) }
        var shortD = a
        shortD["d"] = .string(Base64URL.encode([UInt8](repeating: 7, count: 31)))
        expectJOSEError(.invalidKey, "Ed25519 short d") { _ = try JWK(object: shortD) }
        // EC: d of another key on the same curve.
        let (x, y) = try Self.p256Point()
        let otherD = try #require(
            try JWK.generate(for: .ES256, kid: nil).privateJWK()["d"]?.string.flatMap { Base64URL.decode($0) })
        expectJOSEError(.invalidKey, "EC d") { _ = try JWK(json: Self.ecJSON(x: x, y: y, d: otherD)) }
        // RSA: d of another key.
        var rsa = try Attack.key(.RS256).privateJWK()
        rsa["d"] = try JWK.generate(for: .RS256, kid: nil).privateJWK()["d"]
        expectJOSEError(.invalidKey, "RSA d") { _ = try JWK(object: rsa) }
        var partial = try Attack.key(.RS256).privateJWK()
        partial["qi"] = nil
        expectJOSEError(.invalidKey, "RSA without qi") { _ = try JWK(object: partial) }
    }

    @Test(
        "HMAC secrets shorter than the hash are refused at verification",
        arguments: [JWSAlgorithm.HS256, .HS384, .HS512])
    func shortHMACSecret(_ alg: JWSAlgorithm) throws {
        let size = try #require(alg.digest?.size)
        let short = try JWK(json: #"{"kty":"oct","k":"\#(Base64URL.encode([UInt8](repeating: 9, count: size - 1)))"}"#)
        expectJOSEError(.weakKey) {
            _ = try short.verify(alg, message: [1], signature: [UInt8](repeating: 0, count: size))
        }
        expectJOSEError(.weakKey) { _ = try short.sign(alg, message: [1]) }
    }

    @Test("alg none on a key, and sets that mix secrets with public keys")
    func keyLevelConfusion() throws {
        expectJOSEError(.invalidKey) {
            _ = try JWK(
                json: #"{"kty":"oct","alg":"none","k":"\#(Base64URL.encode([UInt8](repeating: 1, count: 32)))"}"#)
        }
        let rsa = JSONSerializer.serialize(.object(Attack.key(.RS256).publicJWK()))
        let oct = #"{"kty":"oct","k":"\#(Base64URL.encode([UInt8](repeating: 1, count: 32)))"}"#
        expectJOSEError(.invalidKey) { _ = try JWKSet(json: #"{"keys":[\#(rsa),\#(oct)]}"#) }
    }

    @Test("use and key_ops that exclude verification")
    func useAndKeyOps() throws {
        let pub = Attack.key(.ES256).publicJWK()
        let token = try Attack.token(.ES256)
        for (name, value) in [
            ("use", JSONValue.string("enc")), ("key_ops", .array([.string("encrypt")])),
            ("key_ops", .array([.string("sign")]))
        ] {
            var o = pub
            o[name] = value
            let set = JWKSet(keys: [try JWK(object: o)])
            expectJOSEError(.keyMismatch, "\(name) named by kid") {
                try JWSVerifier(keys: set, algorithms: [.ES256]).verify(CompactJWS(token))
            }
            var anonymous = o
            anonymous["kid"] = nil
            let noKid = try Attack.forge(
                header: #"{"alg":"ES256"}"#, payload: "{}", alg: .ES256, key: Attack.key(.ES256))
            expectJOSEError(.keyNotFound, "\(name), no kid") {
                try JWSVerifier(keys: JWKSet(keys: [try JWK(object: anonymous)]), algorithms: [.ES256]).verify(
                    CompactJWS(noKid))
            }
        }
    }

    @Test("duplicate members inside a published key refuse the whole set")
    func duplicateMembersInSet() {
        expectJOSEError(.duplicateMember) { _ = try JWKSet(json: #"{"keys":[{"kty":"EC","kty":"RSA"}]}"#) }
        expectJOSEError(.duplicateMember) { _ = try JWKSet(json: #"{"keys":[],"keys":[]}"#) }
    }

    // MARK: export never leaks

    static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"]

    static func exportedKeys(_ set: JWKSet) throws -> [JSONObject] {
        let doc = try #require(try JSONParser.parse(set.publicJSON()).object)
        return try #require(doc["keys"]?.array).compactMap(\.object)
    }

    @Test("publicJSON of private keys carries no private member, and its keys verify")
    func publicExportAsymmetric() throws {
        let algs: [JWSAlgorithm] = [.RS256, .PS256, .ES256, .ES384, .EdDSA]
        // Parsed from full private JWK documents, as a CLI-generated key file is.
        let privateDocs = try algs.map { JSONSerializer.serialize(.object(try Attack.key($0).privateJWK())) }
        for doc in privateDocs { #expect(doc.contains(#""d":"#)) }
        let set = try JWKSet(json: #"{"keys":[\#(privateDocs.joined(separator: ","))]}"#)
        #expect(set.keys.count == algs.count && set.keys.allSatisfy(\.isPrivate))
        let exported = try Self.exportedKeys(set)
        #expect(exported.count == algs.count)
        for o in exported {
            for name in Self.privateMembers { #expect(o[name] == nil, "\(name) in \(o["kty"]?.string ?? "?")") }
        }
        #expect(!set.publicJSON().contains(#""d""#))
        // The export is usable: it verifies what the private keys signed.
        let verifierSet = try JWKSet(json: set.publicJSON())
        #expect(verifierSet.keys.allSatisfy { !$0.isPrivate })
        for alg in algs {
            try JWSVerifier(keys: verifierSet, algorithms: [alg]).verify(CompactJWS(try Attack.token(alg)))
        }
    }

    @Test("publicJSON of a secret key set never carries the secret")
    func publicExportSymmetric() throws {
        let secret = Attack.key(.HS256)
        let k = try #require(try secret.privateJWK()["k"]?.string)
        let set = JWKSet(keys: [secret])
        let exported = try Self.exportedKeys(set)
        #expect(exported.count == 1)
        for name in Self.privateMembers { #expect(exported[0][name] == nil, "\(name)") }
        #expect(!set.publicJSON().contains(k))
        #expect(secret.publicJWK()["k"] == nil)
    }

    @Test("a kid two members carry names no key, even when one of them is unusable (RFC 7517 §4.5)")
    func sharedKidByName() throws {
        let a = try JWK.generate(for: .EdDSA, kid: "k")
        let b = try JWK.generate(for: .EdDSA, kid: "k")
        let other = try JWK.generate(for: .EdDSA, kid: "other")
        let member = { (k: JWK) in JSONSerializer.serialize(.object(k.publicJWK())) }
        let two = try JWKSet(json: #"{"keys":[\#(member(a)),\#(member(b)),\#(member(other))]}"#)
        #expect(two.key(kid: "k") == nil)
        #expect(two.isShared(kid: "k"))
        #expect(two.key(kid: "other")?.kid == "other")
        #expect(!two.isShared(kid: "other"))
        #expect(two.key(kid: "nobody") == nil)
        #expect(!two.isShared(kid: "nobody"))
        let unusable = #"{"kty":"OKP","crv":"Ed25519","x":"not-a-key","kid":"k"}"#
        let withUnusable = try JWKSet(json: #"{"keys":[\#(member(a)),\#(unusable)]}"#)
        #expect(withUnusable.keys.count == 1)
        #expect(withUnusable.key(kid: "k") == nil)
        #expect(withUnusable.isShared(kid: "k"))
    }
}
