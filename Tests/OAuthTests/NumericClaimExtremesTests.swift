import JOSE
import Testing

@testable import OAuth

/// No signed number stops the process: every numeric claim and parameter the gateway does
/// arithmetic on, at Int64's ends and just past the NumericDate window, is refused or judged,
/// never trapped on (a trap in one worker stops them all).
@Suite("Numeric claims at Int64's extremes")
struct NumericClaimExtremesTests {
    static let now: Int64 = 1_780_000_000

    /// Int64's ends, its middle, the window's edges and the clock's neighbourhood.
    static let extremes: [Int64] = [
        .min, .min + 1, .min / 2, -9_223_372_036_000_000_000, -253_402_300_800, -1, 0, 1, now - 1, now, now + 1,
        253_402_300_799, 253_402_300_800, .max / 2, .max - 1, .max
    ]

    /// The same as JSON number texts, with forms an AS may write: exponents, fractions, a
    /// magnitude past Int64 that a Double still holds.
    static let texts: [String] = extremes.map(String.init) + ["1e300", "-1e300", "9.2e18", "-9.2e18", "1.5", "-0"]

    @Test(arguments: texts)
    func aDateIsAdmittedOnlyInsideTheWindow(_ text: String) {
        let value = JSONValue.number(text)
        if let d = value.numericDate {
            #expect(NumericDate.range.contains(d))
        } else if let i = value.int64 {
            #expect(!NumericDate.range.contains(i))
        }
    }

    @Test(arguments: texts)
    func aStepUpCheckJudgesEveryAuthTimeWithoutTrapping(_ text: String) {
        var requirement = AuthorizationRequirement()
        requirement.maxAge = 300
        let claims = JSONObject(["auth_time": .number(text)])
        for leeway: Int64 in [0, 30, 300] {
            let failure = requirement.stepUpFailure(claims, now: Self.now, leeway: leeway, maxAgeGrace: leeway)
            if let t = JSONValue.number(text).numericDate, t <= Self.now + leeway, Self.now - leeway - t <= 300 {
                #expect(failure == nil)
            } else {
                #expect(failure != nil)
            }
            _ = requirement.stepUpValidUntil(claims)
        }
        // The finding's own values: a session stored before admission checked them.
        if text == String(Int64.min) || text == "-9223372036000000000" {
            #expect(requirement.stepUpFailure(claims, now: Self.now) == .unusableAuthTime)
        }
    }

    @Test(arguments: extremes)
    func aMaxAgeAtItsEndsNeverTraps(_ authTime: Int64) {
        var requirement = AuthorizationRequirement()
        requirement.maxAge = Int.max
        let claims = JSONObject(["auth_time": .number(String(authTime))])
        _ = requirement.stepUpFailure(claims, now: Self.now, leeway: .max, maxAgeGrace: .max)
        _ = requirement.stepUpFailure(claims, now: Self.now, leeway: .min, maxAgeGrace: .min)
        _ = requirement.stepUpValidUntil(claims)
    }

    @Test(arguments: ["exp", "nbf", "iat", "auth_time"], texts)
    func anIntrospectionAnswerWithADateOutsideTheWindowIsInactive(_ claim: String, _ text: String) {
        let issuer = IssuerPolicy(name: "one", issuer: "https://idp.one", algorithms: [.ES256], audiences: ["api"])
        var members = [#""active":true"#, #""exp":\#(Self.now + 60)"#]
        members.removeAll { $0.hasPrefix("\"\(claim)\"") }
        members.append(#""\#(claim)":\#(text)"#)
        let body = Array(("{" + members.joined(separator: ",") + "}").utf8)
        let verdict = IntrospectionResponse.judge(body, issuer: issuer, now: Self.now, defaultTTL: 60)
        if case .active(let token) = verdict {
            #expect(NumericDate.range.contains(token.expiresAt))
            #expect(JSONValue.number(text).numericDate != nil)
        }
    }

    @Test(arguments: texts)
    func aTokenExchangeAnswerWithAnyLifetimeIsJudged(_ text: String) {
        let target = TokenExchange.Target(audiences: ["https://api.example"])
        let body = Array(
            #"{"access_token":"abc","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":\#(text)}"#
                .utf8)
        let result = TokenExchange.parse(status: 200, body: body, target: target, now: Self.now)
        if case .success(let issued) = result, let at = issued.expiresAt {
            #expect(at > Self.now && at <= Self.now + NumericDate.longestLifetime)
        }
    }

    /// RFC 6750 §2.1: a token tokengate will send is a b64token; a token endpoint's answer
    /// with CR/LF (or any other byte) gives no token, and neither does a token exchange's.
    @Test(arguments: ["abc\r\nContent-Length: 0\r\n\r\nPOST /smuggled", "a\nb", "a b", "a\u{0}", "", "é"])
    func aTokenAnswerThatIsNoB64TokenGivesNoToken(_ token: String) {
        let body = JSONSerializer.serialize(
            .object(JSONObject(["access_token": .string(token), "token_type": .string("Bearer")])))
        #expect(throws: TokenResponse.Failure.self) {
            try TokenResponse.parse(status: 200, body: Array(body.utf8)).get()
        }
        var exchanged = JSONObject(["access_token": .string(token), "token_type": .string("Bearer")])
        exchanged["issued_token_type"] = .string(TokenExchange.accessTokenType)
        let answer = Array(JSONSerializer.serialize(.object(exchanged)).utf8)
        guard case .failure = TokenExchange.parse(status: 200, body: answer, target: .init(), now: Self.now) else {
            Issue.record("an exchanged token of \(token.debugDescription) was taken")
            return
        }
    }

    @Test func saturatingArithmeticHoldsAtTheEnds() {
        #expect(Int64.max.saturatingAdd(1) == .max)
        #expect(Int64.min.saturatingAdd(-1) == .min)
        #expect(Int64.min.saturatingSubtract(1) == .min)
        #expect(Int64.max.saturatingSubtract(-1) == .max)
        #expect(Int64(5).saturatingSubtract(7) == -2)
    }
}
