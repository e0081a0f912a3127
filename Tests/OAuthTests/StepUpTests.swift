import JOSE
import Testing

@testable import OAuth

/// RFC 9470: a requirement's `acr` and `max_age`, and the challenge that asks for them.
@Suite("Step-up: acr and max_age (RFC 9470)")
struct StepUpTests {
    static func claims(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONObject { JSONObject(pairs) }

    var requirement: AuthorizationRequirement {
        var r = AuthorizationRequirement()
        r.acr = ["mfa", "phr"]
        r.maxAge = 300
        return r
    }

    @Test func aListedAcrAndAFreshAuthTimeMeetIt() {
        #expect(
            requirement.stepUpFailure(Self.claims(["acr": .string("mfa"), "auth_time": .number("1000")]), now: 1300)
                == nil)
        #expect(
            requirement.stepUpFailure(Self.claims(["acr": .string("phr"), "auth_time": .number("1000")]), now: 1000)
                == nil)
    }

    @Test func eachShortfallIsNamed() {
        #expect(requirement.stepUpFailure(Self.claims(["auth_time": .number("1000")]), now: 1000) == .acr(nil))
        #expect(
            requirement.stepUpFailure(Self.claims(["acr": .string("pwd"), "auth_time": .number("1000")]), now: 1000)
                == .acr("pwd"))
        // A number is not an acr value (OIDC Core §2: a string).
        #expect(
            requirement.stepUpFailure(Self.claims(["acr": .number("2"), "auth_time": .number("1000")]), now: 1000)
                == .acr(nil))
        #expect(requirement.stepUpFailure(Self.claims(["acr": .string("mfa")]), now: 1000) == .noAuthTime)
        #expect(
            requirement.stepUpFailure(Self.claims(["acr": .string("mfa"), "auth_time": .number("1000")]), now: 1301)
                == .tooOld(seconds: 301))
    }

    /// OIDC Core §2: auth_time is when the user authenticated; one an hour ahead of the clock
    /// is not a recent authentication, whatever max_age is.
    @Test func anAuthTimeInTheFutureBeyondTheLeewayFailsMaxAge() {
        let future = Self.claims(["acr": .string("mfa"), "auth_time": .number("4600")])
        #expect(requirement.stepUpFailure(future, now: 1000, leeway: 30) == .futureAuthTime(seconds: 3600))
        #expect(requirement.stepUpFailure(future, now: 1000) == .futureAuthTime(seconds: 3600))
        let justAhead = Self.claims(["acr": .string("mfa"), "auth_time": .number("1030")])
        #expect(requirement.stepUpFailure(justAhead, now: 1000, leeway: 30) == nil)
        #expect(requirement.stepUpFailure(justAhead, now: 1000, leeway: 29) == .futureAuthTime(seconds: 30))
        // The leeway bounds how far ahead; only maxAgeGrace widens max_age.
        let old = Self.claims(["acr": .string("mfa"), "auth_time": .number("1000")])
        #expect(requirement.stepUpFailure(old, now: 1301, leeway: 30) == .tooOld(seconds: 301))
        #expect(requirement.stepUpFailure(old, now: 1301, leeway: 30, maxAgeGrace: 30) == nil)
    }

    @Test func withoutTheRulesNothingIsAsked() {
        let none = AuthorizationRequirement(scopes: ["a"])
        #expect(!none.hasStepUp)
        #expect(none.stepUpFailure(JSONObject(), now: 0) == nil)
        #expect(none.stepUpValidUntil(Self.claims(["auth_time": .number("5")])) == nil)
        #expect(requirement.stepUpValidUntil(Self.claims(["auth_time": .number("5")])) == 305)
    }

    @Test func theChallengeCarriesAcrValuesAndMaxAge() {
        var c = Challenge(
            scheme: "Bearer", error: .insufficient_user_authentication,
            errorDescription: "a different authentication level is required")
        c.acrValues = ["mfa", "phr"]
        c.maxAge = 300
        #expect(
            c.headerValue
                == #"Bearer error="insufficient_user_authentication", error_description="a different authentication level is required", acr_values="mfa phr", max_age="300""#
        )
        #expect(OAuthErrorCode.insufficient_user_authentication.status == 401)
    }
}
