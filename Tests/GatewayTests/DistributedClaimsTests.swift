import Foundation
import JOSE
import Testing

@testable import Gateway

/// Aggregated and distributed claims (OIDC Core §5.6.2): which sources a session follows, the
/// issuer's allow-list of endpoints, what a source's answer (JSON or a JWT the issuer's keys
/// verify) gives, and the bounds on what a session keeps.
@Suite("Distributed claims (OIDC Core §5.6.2)")
struct DistributedClaimsTests {
    static func object(_ json: String) throws -> JSONObject {
        try JSONParser.parseObject(Array(json.utf8), what: "test")
    }

    @Test func followsOnlyTheClaimsTheSessionKeeps() throws {
        let claims = try Self.object(
            """
            {"sub":"u1","_claim_names":{"groups":"src1","roles":"src1","hobbies":"src2","teams":"src3"},
             "_claim_sources":{"src1":{"endpoint":"https://graph.example/v1/me/groups","access_token":"t1"},
                               "src2":{"endpoint":"https://other.example/x"},
                               "src3":{"JWT":"a.b.c"}}}
            """)
        let (sources, failures) = DistributedClaims.sources(claims, wanted: ["groups", "roles", "teams"])
        #expect(failures.isEmpty)
        #expect(
            sources == [
                .init(
                    name: "src1", claims: ["groups", "roles"],
                    kind: .endpoint("https://graph.example/v1/me/groups", accessToken: "t1")),
                .init(name: "src3", claims: ["teams"], kind: .jwt("a.b.c"))
            ])
        // Nothing named: nothing to follow.
        #expect(DistributedClaims.sources(try Self.object(#"{"sub":"u1"}"#), wanted: ["groups"]).sources.isEmpty)
    }

    @Test func referencesThatCannotBeFollowedAreFailuresNamingTheClaim() throws {
        let claims = try Self.object(
            """
            {"_claim_names":{"a":"missing","b":"empty","c":5,"d":"s1","e":"s2","f":"s3","g":"s4","h":"s5"},
             "_claim_sources":{"empty":{},"s1":{"JWT":"x"},"s2":{"JWT":"x"},"s3":{"JWT":"x"},"s4":{"JWT":"x"},
                               "s5":{"JWT":"x"}}}
            """)
        let (sources, failures) = DistributedClaims.sources(claims, wanted: ["a", "b", "c", "d", "e", "f", "g", "h"])
        #expect(sources.map(\.name) == ["s1", "s2", "s3", "s4"])
        #expect(failures.count == 4)
        #expect(failures.contains { $0.claims == ["a"] && $0.reason == "_claim_sources has no missing" })
        #expect(failures.contains { $0.claims == ["b"] && $0.reason.contains("neither JWT nor endpoint") })
        #expect(failures.contains { $0.claims == ["c"] && $0.reason.contains("not a source name") })
        #expect(failures.contains { $0.claims == ["h"] && $0.reason == "more than 4 claim sources" })
    }

    @Test(arguments: [
        ("https://graph.example/v1.0/me/groups", true),
        ("https://graph.example/v1.0/", true),
        ("https://graph.example/v1.0", false),
        ("https://GRAPH.example/v1.0/me?select=id", true),
        ("https://graph.example/v1.0x/me", false),
        ("https://graph.example/v2/me", false),
        ("http://graph.example/v1.0/me", false),
        ("https://graph.example:8443/v1.0/me", false),
        ("https://graph.example.evil/v1.0/me", false),
        ("https://evil@graph.example/v1.0/me", false),
        ("https://graph.example/v1.0/../admin", false),
        ("https://graph.example/v1.0/%2e%2e/admin", false),
        ("https://graph.example/v1.0/./me", false),
        ("file:///etc/passwd", false),
        ("not a url", false)
    ])
    func onlyEndpointsUnderAnAllowedPrefixAreCalled(endpoint: String, allowed: Bool) {
        #expect(DistributedClaims.allowed(endpoint, by: ["https://graph.example/v1.0/"]) == allowed)
    }

    @Test func anEmptyAllowListAllowsNothingAndAHostEntryAllowsItsPaths() {
        #expect(!DistributedClaims.allowed("https://graph.example/x", by: []))
        #expect(DistributedClaims.allowed("https://graph.example/x/y", by: ["https://graph.example"]))
        #expect(!DistributedClaims.allowed("https://graph.example/x/y", by: ["https://graph.example.org"]))
    }

    /// OIDC Core §2: acr, amr and auth_time come from the ID token only. An ID token that names
    /// a source for them (and for groups) has only groups followed, and that source's answer
    /// saying acr "mfa" gives only groups.
    @Test func noSourceSaysHowOrWhenTheUserAuthenticated() throws {
        let claims = try Self.object(
            """
            {"sub":"u1","acr":"pwd","_claim_names":{"acr":"src1","amr":"src1","auth_time":"src1","groups":"src1"},
             "_claim_sources":{"src1":{"endpoint":"https://claims.example/authn"}}}
            """)
        let kept: Set<String> = ["sub", "acr", "amr", "auth_time", "groups"]
        #expect(ClaimsSources.sourced(kept) == ["groups"])
        let (sources, failures) = DistributedClaims.sources(claims, wanted: ClaimsSources.sourced(kept))
        #expect(failures.isEmpty)
        #expect(
            sources == [
                .init(
                    name: "src1", claims: ["groups"], kind: .endpoint("https://claims.example/authn", accessToken: nil))
            ])
        let answer = Array(#"{"groups":["staff"],"acr":"mfa","amr":["otp"],"auth_time":99999999999}"#.utf8)
        let got = try DistributedClaims.claims(
            fromAnswer: answer, contentType: "application/json", names: sources[0].claims, verify: Self.noJWT
        ).get()
        #expect(got == (try Self.object(#"{"groups":["staff"]}"#)))
        // Only the authentication claims named: nothing to follow at all.
        let onlyAuthn = try Self.object(
            """
            {"sub":"u1","_claim_names":{"acr":"src1","auth_time":"src1"},
             "_claim_sources":{"src1":{"endpoint":"https://claims.example/authn"}}}
            """)
        #expect(DistributedClaims.sources(onlyAuthn, wanted: ClaimsSources.sourced(kept)).sources.isEmpty)
    }

    /// §5.6.2: a source speaks for its own claims, not for the OP's identity of the user. An
    /// ID token naming a source for sub, email and email_verified (which `email_domains`
    /// reads) has none of them followed, and an answer that says them gives only groups.
    @Test func noSourceSpeaksForWhoTheUserIs() throws {
        let opOnly = [
            "iss", "sub", "aud", "azp", "tid", "email", "email_verified", "nonce", "exp", "iat", "nbf", "cnf", "sid"
        ]
        let names = (opOnly + ["groups"]).map { #""\#($0)":"src1""# }.joined(separator: ",")
        let claims = try Self.object(
            #"{"sub":"u1","_claim_names":{\#(names)},"_claim_sources":{"src1":{"endpoint":"https://c.example/x"}}}"#)
        let kept = Set(opOnly + ["groups"])
        #expect(ClaimsSources.sourced(kept) == ["groups"])
        let (sources, failures) = DistributedClaims.sources(claims, wanted: ClaimsSources.sourced(kept))
        #expect(failures.isEmpty)
        #expect(sources.map(\.claims) == [["groups"]])
        let answer = Array(
            #"{"groups":["staff"],"sub":"admin","email":"root@corp.example","email_verified":true}"#.utf8)
        let got = try DistributedClaims.claims(
            fromAnswer: answer, contentType: "application/json", names: sources[0].claims, verify: Self.noJWT
        ).get()
        #expect(got == (try Self.object(#"{"groups":["staff"]}"#)))
    }

    /// RFC 6750 §2.1: a source's own access_token goes out as `Bearer <b64token>`; one with a
    /// CR/LF (which would split the call) or any other byte is not used, and the source is
    /// not called.
    @Test(arguments: [#""tok\r\nX-Injected: 1""#, #""tok en""#, #""""#, "42"])
    func aSourceTokenThatIsNoB64TokenIsNotUsed(_ token: String) throws {
        let claims = try Self.object(
            #"{"_claim_names":{"groups":"s"},"_claim_sources":{"s":{"endpoint":"https://c.example/x","access_token":\#(token)}}}"#
        )
        let (sources, failures) = DistributedClaims.sources(claims, wanted: ["groups"])
        #expect(sources.isEmpty)
        #expect(failures.map(\.reason) == ["source s's access_token is not a b64token"])
    }

    static func noJWT(_: String) throws -> JSONObject { throw DistributedClaimsError("no JWT expected") }

    @Test func aJSONAnswerGivesTheNamedClaims() throws {
        let body = Array(#"{"groups":["a","b"],"other":1}"#.utf8)
        let got = try DistributedClaims.claims(
            fromAnswer: body, contentType: "application/json; charset=utf-8", names: ["groups"], verify: Self.noJWT
        ).get()
        #expect(got == (try Self.object(#"{"groups":["a","b"]}"#)))
    }

    @Test func answersThatGiveNothingAreFailures() throws {
        let cases: [([UInt8], String?, String)] = [
            (Array(#"{"other":1}"#.utf8), "application/json", "the answer has no groups"),
            (Array("<html/>".utf8), "text/html", "the answer is text/html, not JSON or a JWT"),
            (Array("{}".utf8), nil, "the answer is untyped"),
            (Array("[1]".utf8), "application/json", "the answer was refused"),
            (
                [UInt8](repeating: UInt8(ascii: " "), count: DistributedClaims.maxAnswerBytes + 1), "application/json",
                "larger than 65536 bytes"
            )
        ]
        for (body, type, why) in cases {
            let result = DistributedClaims.claims(
                fromAnswer: body, contentType: type, names: ["groups"], verify: Self.noJWT)
            guard case .failure(let f) = result else {
                Issue.record("taken: \(why)")
                continue
            }
            #expect(f.claims == ["groups"] && f.reason.contains(why), "\(f.reason)")
        }
    }

    /// The issuer's key and a verifier as LoginService builds it.
    static func issuerVerifier(_ key: JWK) throws -> (String) throws -> JSONObject {
        let set = try JWKSet(json: #"{"keys":[\#(JSONSerializer.serialize(.object(key.publicJWK())))]}"#)
        var policy = JWTClaimsPolicy(issuer: "https://idp.example")
        policy.requireExpiry = false
        let verifier = JWTVerifier(keys: set, algorithms: [.ES256], policy: policy)
        return { try verifier.verify($0, now: 1_800_000_000).claims }
    }

    @Test func anAggregatedJWTCountsOnlyWhenTheIssuersKeysVerifyIt() throws {
        let key = try JWK.generate(for: .ES256, kid: "idp-1")
        let verify = try Self.issuerVerifier(key)
        let good = try JWSSigner.sign(
            claims: JSONObject(["iss": .string("https://idp.example"), "groups": .array([.string("staff")])]),
            alg: .ES256, key: key)
        let got = try DistributedClaims.claims(
            fromAnswer: Array(good.utf8), contentType: "application/jwt", names: ["groups"], verify: verify
        ).get()
        #expect(got["groups"] == .array([.string("staff")]))

        let forger = try JWK.generate(for: .ES256, kid: "idp-1")
        let forged = try JWSSigner.sign(
            claims: JSONObject(["iss": .string("https://idp.example"), "groups": .array([.string("admin")])]),
            alg: .ES256, key: forger)
        let otherIssuer = try JWSSigner.sign(
            claims: JSONObject(["iss": .string("https://evil.example"), "groups": .array([.string("admin")])]),
            alg: .ES256, key: key)
        let expired = try JWSSigner.sign(
            claims: JSONObject([
                "iss": .string("https://idp.example"), "groups": .array([.string("staff")]), "exp": .number("1000")
            ]), alg: .ES256, key: key)
        for token in [forged, otherIssuer, expired, "not.a.jwt"] {
            let result = DistributedClaims.claims(
                fromAnswer: Array(token.utf8), contentType: "application/jwt", names: ["groups"], verify: verify)
            guard case .failure(let f) = result else {
                Issue.record("a JWT the issuer did not vouch for was taken")
                continue
            }
            #expect(f.reason.hasPrefix("the answer was refused"))
        }
    }

    @Test func aSessionKeepsAtMostMaxKeptBytesFromItsSources() throws {
        let source = DistributedClaims.Source(name: "src1", claims: ["groups"], kind: .jwt("x"))
        let groups = JSONValue.array((0..<600).map { .string("group-\($0)-0123456789abcdef") })
        let big = JSONObject(["groups": groups])
        let state = ClaimsSources.take(.success(big), source, into: .init(claims: JSONObject()))
        #expect(state.claims["groups"] == nil && state.resolved.isEmpty)
        #expect(state.failures.first?.reason.contains("at most 16384 in all") == true)

        let small = JSONObject(["groups": .array([.string("staff")])])
        let ok = ClaimsSources.take(.success(small), source, into: .init(claims: JSONObject()))
        #expect(ok.claims["groups"] == .array([.string("staff")]) && ok.resolved == ["groups"] && ok.failures.isEmpty)
    }

    @Test func theSessionRecordNamesWhyAClaimIsMissing() throws {
        var claims = JSONObject(["sub": .string("u1")])
        claims[DistributedClaims.record] = DistributedClaims.record(
            resolved: ["roles"], failures: [.init(claims: ["groups"], reason: "source src1 answered 500")], at: 5)
        #expect(DistributedClaims.failure(of: "groups", in: claims) == "source src1 answered 500")
        #expect(DistributedClaims.failure(of: "roles", in: claims) == nil)
        #expect(
            DistributedClaims.failures(in: claims, of: ["groups", "email"])
                == "; distributed claims missing (groups: source src1 answered 500)")
        #expect(DistributedClaims.failures(in: JSONObject(), of: ["groups"]) == "")
    }
}
