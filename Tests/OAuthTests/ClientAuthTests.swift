import JOSE
import Testing

@testable import OAuth

@Suite("Client authentication (RFC 6749 §2.3.1, RFC 7523) and introspection answers (RFC 7662)")
struct ClientAuthTests {
    @Test func basicEncodesBothParts() throws {
        let c = try ClientAuthentication.clientSecretBasic(clientID: "app 1", secret: "p@ss:word").credentials(
            audience: "x", now: 0)
        // "app+1:p%40ss%3Aword" base64
        #expect(c.headers == ["Authorization: Basic YXBwKzE6cCU0MHNzJTNBd29yZA=="])
        #expect(c.form.isEmpty)
    }

    @Test func postPutsThemInTheBody() throws {
        let c = try ClientAuthentication.clientSecretPost(clientID: "a", secret: "b").credentials(audience: "x", now: 0)
        #expect(c.headers.isEmpty && c.form.map(\.0) == ["client_id", "client_secret"])
    }

    @Test func assertionsCarryTheRFC7523Claims() throws {
        let key = try JWK.generate(for: .ES256, kid: "c1")
        let now: Int64 = 1_800_000_000
        for auth in [
            ClientAuthentication.privateKeyJWT(clientID: "gw", key: key, alg: .ES256),
            .clientSecretJWT(clientID: "gw", secret: String(repeating: "s", count: 32))
        ] {
            let c = try auth.credentials(audience: "https://as.example", now: now)
            let form = Dictionary(uniqueKeysWithValues: c.form)
            #expect(form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            let jws = try CompactJWS(form["client_assertion"]!)
            let claims = try jws.claims()
            #expect(
                claims["iss"] == .string("gw") && claims["sub"] == .string("gw")
                    && claims["aud"] == .string("https://as.example"))
            #expect(claims["exp"]?.int64 == now + 60 && claims["jti"]?.string?.isEmpty == false)
        }
        // jti is unique per assertion.
        let a = try ClientAssertion.make(clientID: "gw", audience: "x", key: key, alg: .ES256, now: now)
        let b = try ClientAssertion.make(clientID: "gw", audience: "x", key: key, alg: .ES256, now: now)
        #expect(try CompactJWS(a).claims()["jti"] != CompactJWS(b).claims()["jti"])
    }

    let issuer = IssuerPolicy(name: "corp", issuer: "https://as", algorithms: [.ES256], audiences: ["api"])

    func judge(_ json: String) -> IntrospectionResponse.Verdict {
        IntrospectionResponse.judge(Array(json.utf8), issuer: issuer, now: 1000, defaultTTL: 60)
    }

    /// RFC 7662 §2.2: only a JSON object with a boolean `active` is an answer about the token.
    @Test(arguments: [
        (#"{"active":false}"#, true), (#"{"active":true,"sub":"a"}"#, true),
        ("<html><body>Service maintenance</body></html>", false), (#"{"active":tr"#, false), ("", false),
        (#"{"active":"true"}"#, false), (#"{"sub":"a"}"#, false), ("[true]", false)
    ])
    func onlyAJSONObjectWithActiveIsAnIntrospectionResponse(body: String, isResponse: Bool) {
        #expect(IntrospectionResponse.isResponse(Array(body.utf8)) == isResponse)
    }

    @Test func introspectionVerdicts() {
        guard
            case .active(let t) = judge(
                #"{"active":true,"sub":"alice","scope":"a b","exp":2000,"aud":["api"],"iss":"https://as","cnf":{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}"#
            )
        else {
            Issue.record("active token refused")
            return
        }
        #expect(
            t.subject == "alice" && t.expiresAt == 2000 && t.jkt == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
                && t.isSenderConstrained)
        for bad in [
            #"{"active":false}"#, #"{"active":"true"}"#, #"{}"#, "not json", #"{"active":true,"exp":500}"#,
            #"{"active":true,"aud":"other"}"#, #"{"active":true,"iss":"https://evil"}"#, #"{"active":true,"nbf":5000}"#,
            #"{"active":true,"active":true}"#
        ] {
            guard case .inactive = judge(bad) else {
                Issue.record("accepted: \(bad)")
                return
            }
        }
    }

    @Test func formEncoding() {
        #expect(FormEncoding.body([("a b", "c&d=e"), ("x", "ä")]) == "a+b=c%26d%3De&x=%C3%A4")
    }
}
