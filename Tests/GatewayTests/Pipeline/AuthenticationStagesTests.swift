import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// The stages that admit a request: a let-through CORS preflight, a public route, a token,
/// a session. Each refusal is sent from the caller's side and its answer checked.
@Suite("Authentication stages: who a request is admitted as, or why not")
struct AuthenticationStagesTests {
    static let preflight: [(name: String, value: String)] = [
        ("Host", "a"), ("Origin", "https://app.example"), ("Access-Control-Request-Method", "POST")
    ]

    @Test func aCORSPreflightIsAdmittedWithNoCredential() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "OPTIONS", "/api/x", fields: Self.preflight)
        #expect(h.run(try #require(h.stage(CORSPreflightStage.self))).proceeds)
        #expect(h.request.admission?.preflight == true && h.request.admission?.identity.isEmpty == true)
        // The token stage lets an admitted request pass.
        #expect(h.run(try #require(h.stage(TokenStage.self))).proceeds)
        #expect(h.request.context.caller == nil, "a preflight has no caller")
    }

    @Test func anOptionsRequestThatIsNoPreflightStillNeedsItsToken() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "OPTIONS", "/api/x")
        #expect(h.run(try #require(h.stage(CORSPreflightStage.self))).proceeds)
        #expect(h.request.admission == nil)
        #expect(h.run(try #require(h.stage(TokenStage.self))).suspends)
        #expect(h.transport.status == 401)
    }

    @Test func aPublicRouteAdmitsWithNoIdentity() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/x")
        #expect(h.run(PublicRouteStage()).proceeds)
        #expect(h.request.admission?.identity.isEmpty == true && h.request.admission?.session == false)
    }

    @Test func aRequestWithoutATokenGetsTheBareChallenge() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/api/x")
        h.run(try #require(h.stage(TokenStage.self)))
        #expect(h.transport.status == 401)
        let challenge = h.transport.head?.fields.first("WWW-Authenticate") ?? ""
        #expect(challenge.hasPrefix("Bearer") && !challenge.contains("error="), "RFC 6750 §3.1: \(challenge)")
        #expect(h.request.admission == nil)
    }

    @Test func aForgedTokenIsInvalidToken() throws {
        let w = try testWorker(PipelineConfigs.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let other = try JWK.generate(for: .ES256, kid: "k1")
        let forged = try testAccessToken(key: other, now: Int64(Date().timeIntervalSince1970))
        let h = try StageHarness(w, "GET", "/api/x", fields: [("Host", "a"), ("Authorization", "Bearer " + forged)])
        h.run(try #require(h.stage(TokenStage.self)))
        #expect(h.transport.status == 401)
        #expect(h.transport.head?.fields.first("WWW-Authenticate")?.contains("invalid_token") == true)
        #expect(h.request.context.caller == nil)
    }

    @Test func aGoodTokenAdmitsWithTheCallerAndItsIdentityHeaders() throws {
        let w = try testWorker(PipelineConfigs.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let token = try testAccessToken(key: key, now: Int64(Date().timeIntervalSince1970), sub: "alice")
        let h = try StageHarness(w, "GET", "/api/x", fields: [("Host", "a"), ("Authorization", "Bearer " + token)])
        // Once admitted, the chain goes on (it reaches the upstream stages, which have no
        // upstream to reach here); the admission is the stage's.
        h.run(try #require(h.stage(TokenStage.self)))
        let admission = try #require(h.request.admission)
        #expect(admission.identity.contains { $0.0 == "X-User" && $0.1 == "alice" })
        #expect(h.request.context.caller?.subject == "alice")
        #expect(h.request.context.caller?.issuer == "one", "the issuer as the config names it")
    }

    @Test func aSessionRouteAnswersAnAPICallWithoutSessionWith401() throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "GET", "/web/data",
            fields: [("Host", "a"), ("Accept", "application/json")])
        h.run(try #require(h.stage(SessionStage.self)))
        #expect(h.transport.status == 401)
        #expect(h.json["error"] as? String == "login_required")
    }

    @Test func aSessionRouteOffersABrowserTheChoiceOfClients() throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "GET", "/web/page",
            fields: [("Host", "a"), ("Sec-Fetch-Mode", "navigate")])
        h.run(try #require(h.stage(SessionStage.self)))
        #expect(h.transport.status == 200)
        #expect(h.transport.bodyText.contains("client=web") && h.transport.bodyText.contains("client=ext"))
        #expect(h.request.admission == nil)
    }
}
