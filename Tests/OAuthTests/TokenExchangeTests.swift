import JOSE
import Testing

@testable import OAuth

/// RFC 8693 token exchange, the client side: the request's form, and what an answer must be
/// for its token to be sent on (from the AS's side: every way an answer can be unusable).
@Suite("Token exchange (RFC 8693)")
struct TokenExchangeTests {
    static let target = TokenExchange.Target(
        audiences: ["orders-backend"], resources: ["https://orders.internal/"], scope: "orders:read")
    static let now: Int64 = 1_800_000_000

    @Test func theFormNamesTheSubjectAndTheTarget() {
        let form = TokenExchange.form(subjectToken: "abc", target: Self.target)
        #expect(form.first! == ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"))
        let fields = Dictionary(form.map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
        #expect(fields["subject_token"] == "abc")
        #expect(fields["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token")
        #expect(fields["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token")
        #expect(fields["resource"] == "https://orders.internal/")
        #expect(fields["audience"] == "orders-backend")
        #expect(fields["scope"] == "orders:read")
        // Several resources are several parameters (RFC 8693 §2.1, RFC 8707 §2).
        let two = TokenExchange.Target(resources: ["https://a/", "https://b/"])
        #expect(TokenExchange.form(subjectToken: "t", target: two).filter { $0.0 == "resource" }.count == 2)
        #expect(!TokenExchange.form(subjectToken: "t", target: two).contains { $0.0 == "scope" || $0.0 == "audience" })
    }

    static func jwt(_ claims: JSONObject) throws -> String {
        try JWSSigner.sign(claims: claims, alg: .ES256, key: try JWK.generate(for: .ES256, kid: nil))
    }

    static func answer(_ token: String, extra: String = "") -> [UInt8] {
        Array(
            (#"{"access_token":"\#(token)","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer""#
                + extra + "}").utf8)
    }

    func parse(_ body: [UInt8], status: Int = 200) -> Result<TokenExchange.IssuedToken, TokenExchange.Failure> {
        TokenExchange.parse(status: status, body: body, target: Self.target, now: Self.now)
    }

    @Test func aJWTForTheTargetIsKeptUntilTheSoonerOfExpiresInAndExp() throws {
        let token = try Self.jwt(
            JSONObject(["aud": .array([.string("https://orders.internal/")]), "exp": .number(String(Self.now + 100))]))
        let issued = try parse(Self.answer(token, extra: #","expires_in":300,"scope":"orders:read""#)).get()
        #expect(issued.token == token)
        #expect(issued.expiresAt == Self.now + 100)
        #expect(issued.scope == "orders:read")
        #expect(!issued.isDPoPBound)
        // An audience name counts as much as a resource.
        let byName = try Self.jwt(JSONObject(["aud": .string("orders-backend")]))
        #expect(try parse(Self.answer(byName, extra: #","expires_in":60"#)).get().expiresAt == Self.now + 60)
    }

    /// `mode: id_jag`: the IdP's answer is an ID-JAG (issued_token_type id-jag, token_type
    /// N_A, a JWT for the upstream's AS); the upstream AS's answer is a plain grant answer.
    @Test func anIDJAGAndTheGrantAnswerAfterIt() throws {
        let target = TokenExchange.Target(
            audiences: ["https://as.files"], resources: ["https://files/api"],
            requestedTokenType: TokenExchange.idJAGTokenType)
        let jag = try Self.jwt(JSONObject(["aud": .string("https://as.files"), "exp": .number(String(Self.now + 300))]))
        func body(_ token: String, type: String, tokenType: String) -> [UInt8] {
            Array(#"{"access_token":"\#(token)","issued_token_type":"\#(type)","token_type":"\#(tokenType)"}"#.utf8)
        }
        let issued = try TokenExchange.parse(
            status: 200, body: body(jag, type: TokenExchange.idJAGTokenType, tokenType: "N_A"), target: target,
            now: Self.now
        ).get()
        #expect(issued.token == jag && issued.expiresAt == Self.now + 300)
        // An ID-JAG asked for: an access token, a Bearer token type, or an opaque one are not one.
        for (token, type, tokenType) in [
            (jag, TokenExchange.accessTokenType, "N_A"), (jag, TokenExchange.idJAGTokenType, "Bearer"),
            ("opaque", TokenExchange.idJAGTokenType, "N_A")
        ] {
            guard
                case .failure(.unusable) = TokenExchange.parse(
                    status: 200, body: body(token, type: type, tokenType: tokenType), target: target, now: Self.now)
            else {
                Issue.record("took \(type) \(tokenType)")
                continue
            }
        }
        // The upstream AS's answer names no issued_token_type (RFC 6749 §5.1); its token is for
        // the resource.
        let sent = TokenExchange.Target(resources: ["https://files/api"])
        let access = try Self.jwt(JSONObject(["aud": .string("https://files/api")]))
        let grant = Array(#"{"access_token":"\#(access)","token_type":"Bearer","expires_in":60}"#.utf8)
        #expect(
            try TokenExchange.parse(status: 200, body: grant, target: sent, now: Self.now, grantAnswer: true).get()
                .token == access)
        // A token for the upstream's AS itself is not one for the upstream.
        let forTheAS = try Self.jwt(JSONObject(["aud": .string("https://as.files")]))
        let asOnly = Array(#"{"access_token":"\#(forTheAS)","token_type":"Bearer"}"#.utf8)
        guard
            case .failure(.unusable) = TokenExchange.parse(
                status: 200, body: asOnly, target: sent, now: Self.now, grantAnswer: true)
        else {
            Issue.record("took a token for the upstream's AS")
            return
        }
        let elsewhere = try Self.jwt(JSONObject(["aud": .string("https://other/api")]))
        let wrong = Array(#"{"access_token":"\#(elsewhere)","token_type":"Bearer"}"#.utf8)
        guard
            case .failure(.unusable) = TokenExchange.parse(
                status: 200, body: wrong, target: sent, now: Self.now, grantAnswer: true)
        else {
            Issue.record("took a token for another audience")
            return
        }
    }

    @Test func anOpaqueTokenIsTakenAsIssuedForTheTarget() throws {
        let issued = try parse(Self.answer("opq_abc", extra: #","expires_in":120"#)).get()
        #expect(issued.token == "opq_abc")
        #expect(issued.expiresAt == Self.now + 120)
        #expect(try parse(Self.answer("opq_abc")).get().expiresAt == nil)
    }

    @Test(arguments: [
        (#"{"aud":"api"}"#, "the issued token's aud does not name the target"),
        (#"{"aud":["api","other"]}"#, "the issued token's aud does not name the target"),
        (#"{"exp":1}"#, "the issued token's aud does not name the target"),
        (#"{"aud":"orders-backend","exp":1}"#, "the issued token has expired")
    ])
    func aJWTForAnotherAudienceOrExpiredIsUnusable(claims: String, why: String) throws {
        let token = try Self.jwt(try JSONParser.parseObject(Array(claims.utf8), what: "claims"))
        guard case .failure(.unusable(let text)) = parse(Self.answer(token)) else {
            Issue.record("accepted a token with \(claims)")
            return
        }
        #expect(text == why)
    }

    @Test(arguments: [
        ("not json", "the answer is not a JSON object"),
        (
            #"{"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}"#,
            "no access_token"
        ),
        (#"{"access_token":"","issued_token_type":"x","token_type":"Bearer"}"#, "no access_token"),
        (#"{"access_token":"a","token_type":"Bearer"}"#, "no issued_token_type (RFC 8693 §2.2.1)"),
        (
            #"{"access_token":"a","issued_token_type":"urn:ietf:params:oauth:token-type:id_token","token_type":"Bearer"}"#,
            "issued_token_type urn:ietf:params:oauth:token-type:id_token is not the type asked for"
        ),
        (
            #"{"access_token":"a","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"N_A"}"#,
            "token_type is not Bearer or DPoP"
        ),
        (
            #"{"access_token":"a","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#,
            "token_type is not Bearer or DPoP"
        ),
        (
            #"{"access_token":"a","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":0}"#,
            "expires_in is not positive"
        )
    ])
    func anAnswerThatIsNoUsableTokenIsRefused(body: String, why: String) {
        guard case .failure(.unusable(let text)) = parse(Array(body.utf8)) else {
            Issue.record("accepted \(body)")
            return
        }
        #expect(text == why)
    }

    @Test func aDPoPBoundTokenIsUsableOnlyWhenBoundToTheKeyThatAsked() throws {
        let jkt = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        func answer(_ cnf: String?) throws -> [UInt8] {
            var claims = JSONObject(["aud": .string("orders-backend")])
            if let cnf { claims["cnf"] = .object(JSONObject(["jkt": .string(cnf)])) }
            let token = try Self.jwt(claims)
            return Array(
                (#"{"access_token":"\#(token)","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","#
                    + #""token_type":"DPoP"}"#).utf8)
        }
        func parse(_ body: [UInt8], boundTo: String?) -> Result<TokenExchange.IssuedToken, TokenExchange.Failure> {
            TokenExchange.parse(status: 200, body: body, target: Self.target, boundTo: boundTo, now: Self.now)
        }
        #expect(try parse(answer(jkt), boundTo: jkt).get().isDPoPBound)
        // An opaque DPoP token cannot be checked; the AS bound it to the proof's key (§5).
        let opaque = #"{"access_token":"o","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","#
        #expect(try parse(Array((opaque + #""token_type":"DPoP"}"#).utf8), boundTo: jkt).get().isDPoPBound)
        #expect(
            try parse(answer(jkt), boundTo: nil)
                == .failure(.unusable("token_type is DPoP, but no DPoP proof was sent")))
        #expect(
            try parse(answer("another-key-thumbprint"), boundTo: jkt)
                == .failure(.unusable("the issued token is bound to another key")))
        // Asked with a proof, a Bearer answer (an AS without DPoP) is used as Bearer.
        #expect(try parse(Self.answer("b"), boundTo: jkt).get().isDPoPBound == false)
    }

    @Test(arguments: [
        (400, #"{"error":"invalid_grant"}"#, "invalid_grant"),
        (400, #"{"error":"invalid_target","error_description":"Unknown resource"}"#, "invalid_target"),
        (401, #"{"error":"invalid_client"}"#, "invalid_client"),
        (503, "<html>down</html>", "invalid_response"),
        // An error code outside RFC 6749 §5.2's characters is not repeated.
        (400, #"{"error":"bad\"code"}"#, "invalid_response"),
        (400, #"{"error":"\u0001"}"#, "invalid_response")
    ])
    func aRefusalCarriesTheASsErrorCode(status: Int, body: String, code: String) {
        #expect(parse(Array(body.utf8), status: status) == .failure(.refused(error: code, status: status)))
    }
}
