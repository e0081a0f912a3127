import Foundation
import JOSE
import Testing

@testable import OAuth

/// Security Event Tokens as a Shared Signals receiver takes them (RFC 8417, SSF 1.0 §4.1):
/// every refusal with the RFC 8935 §2.4 error it is answered with, the event types and their
/// aliases, and each subject format of RFC 9493.
@Suite("Shared Signals: SETs and subject identifiers")
struct SecurityEventTokenTests {
    static let now: Int64 = 1_700_000_000
    static let key = try! JWK.generate(for: .ES256, kid: "tx-1")
    static let keys = JWKSet(keys: [try! JWK(object: key.publicJWK())])
    static let verifier = SecurityEventTokenVerifier(issuer: "https://idp.example", audience: "https://gw.example")
    static let caep = "https://schemas.openid.net/secevent/caep/event-type/"
    static let risc = "https://schemas.openid.net/secevent/risc/event-type/"

    static func subject(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue { .object(JSONObject(pairs)) }

    static func set(
        typ: String? = "secevent+jwt", alg: JWSAlgorithm = .ES256, key signer: JWK = key,
        _ change: (inout JSONObject) -> Void = { _ in }
    ) throws -> String {
        var c = JSONObject()
        c["iss"] = .string("https://idp.example")
        c["aud"] = .array([.string("https://gw.example")])
        c["iat"] = .number(String(now))
        c["jti"] = .string("set-1")
        c["sub_id"] = subject([
            "format": .string("iss_sub"), "iss": .string("https://idp.example"), "sub": .string("alice")
        ])
        c["events"] = .object(
            JSONObject([caep + "session-revoked": .object(JSONObject(["event_timestamp": .number(String(now - 5))]))]))
        change(&c)
        var h = JSONObject()
        if let typ { h["typ"] = .string(typ) }
        return try JWSSigner.sign(claims: c, header: h, alg: alg, key: signer)
    }

    @Test func googlesSETsPassWithoutTypAndWithTheirSpellingOfIss() throws {
        var google = SecurityEventTokenVerifier(issuer: "https://idp.example", audiences: ["app-1", "app-2"])
        google.requiresType = false
        google.issuerSpellings = ["https://idp.example/"]
        let untyped = try Self.set(typ: nil) { c in
            c["iss"] = .string("https://idp.example/")
            c["aud"] = .string("app-2")
        }
        #expect(try google.verify(untyped, keys: Self.keys, now: Self.now).jti == "set-1")
        // The strict verifier refuses both; Google's still refuses a typ that is not a SET's,
        // another spelling of the issuer, and another app's client ID.
        #expect(refusal(untyped) == .invalidRequest)
        func googleRefusal(_ token: String) -> SETRefusal.Code? {
            do {
                _ = try google.verify(token, keys: Self.keys, now: Self.now)
                return nil
            } catch { return error.code }
        }
        #expect(googleRefusal(try Self.set(typ: "JWT") { $0["aud"] = .string("app-1") }) == .invalidRequest)
        #expect(
            googleRefusal(
                try Self.set(typ: nil) {
                    $0["iss"] = .string("https://idp.example//")
                    $0["aud"] = .string("app-1")
                }) == .invalidIssuer)
        #expect(googleRefusal(try Self.set(typ: nil) { $0["aud"] = .string("app-3") }) == .invalidAudience)
    }

    func refusal(_ token: String) -> SETRefusal.Code? {
        do {
            _ = try Self.verifier.verify(token, keys: Self.keys, now: Self.now)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aValidSETGivesItsEventSubjectAndTime() throws {
        let set = try Self.verifier.verify(try Self.set(), keys: Self.keys, now: Self.now)
        #expect(set.jti == "set-1" && set.iat == Self.now && set.eventTime == Self.now - 5)
        #expect(set.event.type == .sessionRevoked)
        #expect(set.event.subject == .issSub(iss: "https://idp.example", sub: "alice"))
        // Without event_timestamp, the SET's iat stands in; `application/` may prefix the typ.
        let plain = try Self.verifier.verify(
            try Self.set(typ: "application/secevent+jwt") { c in
                c["events"] = .object(JSONObject([Self.risc + "account-disabled": .object(JSONObject())]))
            }, keys: Self.keys, now: Self.now)
        #expect(plain.eventTime == Self.now && plain.event.type == .accountDisabled)
    }

    @Test func everyRefusalHasItsError() throws {
        let other = try JWK.generate(for: .ES256, kid: "tx-1")
        #expect(refusal(try Self.set(key: other)) == .invalidKey)  // another key under the same kid
        #expect(refusal(try Self.set { c in c["iss"] = .string("https://evil.example") }) == .invalidIssuer)
        #expect(refusal(try Self.set { c in c["aud"] = .string("https://other.example") }) == .invalidAudience)
        #expect(refusal(try Self.set(typ: nil)) == .invalidRequest)
        #expect(refusal(try Self.set(typ: "at+jwt")) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["jti"] = nil }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["iat"] = nil }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["iat"] = .number(String(Self.now + 3600)) }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["sub"] = .string("alice") }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["exp"] = .number(String(Self.now + 60)) }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["events"] = nil }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["events"] = .object(JSONObject()) }) == .invalidRequest)
        let two = JSONObject([
            Self.caep + "session-revoked": .object(JSONObject()), Self.risc + "account-disabled": .object(JSONObject())
        ])
        #expect(refusal(try Self.set { c in c["events"] = .object(two) }) == .invalidRequest)
        #expect(refusal(try Self.set { c in c["sub_id"] = nil }) == .invalidRequest)  // an effect needs a subject
        #expect(
            refusal(try Self.set { c in c["sub_id"] = Self.subject(["format": .string("email")]) }) == .invalidRequest)
        #expect(refusal("not a jws") == .invalidRequest)
        #expect(refusal(String(repeating: "a", count: SecurityEventTokenVerifier.maxSize + 1)) == .invalidRequest)
    }

    @Test func aSETOlderThanTheReceiversMemoryAndAFutureEventAreRefused() throws {
        var remembering = Self.verifier
        remembering.maxAge = 3600
        let old = try Self.set { c in c["iat"] = .number(String(Self.now - 3700)) }
        #expect(throws: SETRefusal.self) { try remembering.verify(old, keys: Self.keys, now: Self.now) }
        #expect(refusal(old) == nil)  // without a memory, any age
        let ahead = try Self.set { c in
            c["events"] = .object(
                JSONObject([
                    Self.caep + "session-revoked": .object(
                        JSONObject(["event_timestamp": .number(String(Self.now + 3600))]))
                ]))
        }
        #expect(refusal(ahead) == .invalidRequest)
    }

    @Test func noneAndHMACAreNeverAccepted() throws {
        // alg none: a header and claims, no signature.
        func b64(_ s: String) -> String { Base64URL.encode(Array(s.utf8)) }
        let claims = #"{"iss":"https://idp.example","aud":"https://gw.example","iat":1700000000,"jti":"n"}"#
        #expect(refusal(b64(#"{"alg":"none","typ":"secevent+jwt"}"#) + "." + b64(claims) + ".") == .invalidKey)
        // HS256 keyed with the transmitter's public key (the classic key-confusion attack).
        let publicBytes = Array(JSONSerializer.serialize(.object(Self.key.publicJWK())).utf8)
        let hmac = try JWK(object: JSONObject(["kty": .string("oct"), "k": .string(Base64URL.encode(publicBytes))]))
        #expect(refusal(try Self.set(alg: .HS256, key: hmac)) == .invalidKey)
        let lenient = SecurityEventTokenVerifier(issuer: "i", audience: "a", algorithms: [.HS256, .ES256])
        #expect(lenient.algorithms == [.ES256])
    }

    @Test func aliasesOfOneTypeAreOneEventAndUnknownTypesPass() throws {
        let aliases = JSONObject([
            Self.caep + "session-revoked": .object(JSONObject()), Self.risc + "sessions-revoked": .object(JSONObject())
        ])
        let set = try Self.verifier.verify(
            try Self.set { c in c["events"] = .object(aliases) }, keys: Self.keys, now: Self.now)
        #expect(set.event.type == .sessionRevoked)
        let unknown = try Self.verifier.verify(
            try Self.set { c in
                c["events"] = .object(JSONObject(["https://example.com/new-type": .object(JSONObject())]))
            },
            keys: Self.keys, now: Self.now)
        #expect(unknown.event.type == .other("https://example.com/new-type"))
        // A stream event needs no subject; verification carries its state.
        let verification = try Self.verifier.verify(
            try Self.set { c in
                c["sub_id"] = nil
                c["events"] = .object(
                    JSONObject([
                        "https://schemas.openid.net/secevent/ssf/event-type/verification": .object(
                            JSONObject(["state": .string("st-1")]))
                    ]))
            }, keys: Self.keys, now: Self.now)
        #expect(verification.event.type == .verification && verification.event.state == "st-1")
    }

    @Test func theEventsOwnSubjectServesOlderTransmitters() throws {
        let set = try Self.verifier.verify(
            try Self.set { c in
                c["sub_id"] = nil
                c["events"] = .object(
                    JSONObject([
                        Self.caep + "credential-change": .object(
                            JSONObject([
                                "subject": Self.subject(["format": .string("email"), "email": .string("a@example.com")])
                            ]))
                    ]))
            }, keys: Self.keys, now: Self.now)
        #expect(set.event.type == .credentialChange && set.event.subject == .email("a@example.com"))
    }

    @Test func subjectFormats() throws {
        func parse(_ json: String) throws -> SubjectIdentifier {
            try SubjectIdentifier(try #require(try JSONParser.parse(Array(json.utf8)).object))
        }
        #expect(try parse(#"{"format":"opaque","id":"u-1"}"#) == .opaque("u-1"))
        #expect(try parse(#"{"format":"email","email":"a@b.c"}"#) == .email("a@b.c"))
        #expect(
            try parse(#"{"subject_type":"iss-sub","iss":"https://accounts.google.com","sub":"7"}"#)
                == .issSub(iss: "https://accounts.google.com", sub: "7"))
        #expect(try parse(#"{"format":"account","uri":"acct:a@b.c"}"#) == .other(format: "account"))
        #expect(
            try parse(
                #"{"format":"complex","user":{"format":"opaque","id":"u"},"session":{"format":"opaque","id":"s"}}"#)
                == .complex(user: .opaque("u"), session: .opaque("s")))
        #expect(
            try parse(#"{"user":{"format":"email","email":"a@b.c"}}"#) == .complex(user: .email("a@b.c"), session: nil))
        #expect(
            try parse(
                #"{"format":"aliases","identifiers":[{"format":"opaque","id":"u"},{"format":"email","email":"e"}]}"#)
                == .aliases([.opaque("u"), .email("e")]))
        for bad in [
            #"{"id":"u"}"#, #"{"format":"opaque"}"#, #"{"format":"opaque","id":7}"#, #"{"format":"email","email":""}"#,
            #"{"format":"telepathy"}"#, #"{"format":"aliases","identifiers":[]}"#,
            #"{"format":"aliases","identifiers":[{"format":"aliases","identifiers":[{"format":"opaque","id":"u"}]}]}"#,
            #"{"format":"complex"}"#, #"{"format":"complex","user":"u"}"#,
            #"{"format":"complex","user":{"format":"complex","user":{"format":"opaque","id":"u"}}}"#
        ] {
            #expect(throws: SubjectIdentifierError.self, "\(bad)") { try parse(bad) }
        }
    }
}
