import JOSE
import Testing

@testable import OAuth

/// An authorization request to the AS, in RFC 6749 §4.1.2.1's two steps: what names the client
/// and its redirect URI (a page when in doubt), then the rest (errors to the redirect URI).
@Suite("Authorization server: the authorization request")
struct AuthorizationRequestTests {
    static let client = "https://app.example/client.json"
    static let resource = "https://gw.example/mcp"
    static let challenge = Base64URL.encode([UInt8](repeating: 7, count: 32))

    static func pairs(_ changes: [String: String?] = [:]) -> [(String, String)] {
        var p: [String: String] = [
            "client_id": client, "redirect_uri": "http://127.0.0.1:7000/cb", "response_type": "code",
            "code_challenge": challenge, "code_challenge_method": "S256", "resource": resource, "state": "s1"
        ]
        for (k, v) in changes { p[k] = v }
        return p.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    static func read(_ changes: [String: String?] = [:]) throws(TokenEndpointError) -> AuthorizationRequest {
        guard case .success(let target) = AuthorizationRequest.target(pairs(changes)) else {
            throw TokenEndpointError("page", "target refused")
        }
        return try AuthorizationRequest(target, resources: [resource])
    }

    @Test func aGoodRequestIsRead() throws {
        let r = try Self.read(["scope": "mcp:read  mcp:write", "dpop_jkt": Self.challenge])
        #expect(r.clientID.text == Self.client && r.redirectURI == "http://127.0.0.1:7000/cb")
        #expect(r.scopes == ["mcp:read", "mcp:write"] && r.state == "s1" && r.dpopJKT == Self.challenge)
        #expect(try Self.read().scopes == nil)
    }

    @Test(
        arguments: [
            (["client_id": nil], "client_id is missing"),
            (["client_id": "app"], "not a client metadata document URL"),
            (["client_id": "http://app.example/c.json"], "not a client metadata document URL"),
            (["redirect_uri": nil], "redirect_uri is missing"),
            (["redirect_uri": ""], "redirect_uri is missing")
        ] as [([String: String?], String)])
    func whatIsInDoubtIsAPage(_ changes: [String: String?], _ why: String) {
        guard case .failure(let e) = AuthorizationRequest.target(Self.pairs(changes)) else {
            Issue.record("accepted \(changes)")
            return
        }
        #expect(e.description.contains(why), "\(e)")
    }

    @Test func aParameterGivenTwiceIsAPage() {
        let twice = Self.pairs() + [("state", "again")]
        guard case .failure(let e) = AuthorizationRequest.target(twice) else {
            Issue.record("accepted a parameter twice")
            return
        }
        #expect(e.description.contains("state is given twice"))
    }

    @Test(
        arguments: [
            (["response_type": "token"], "unsupported_response_type"),
            (["response_type": nil], "unsupported_response_type"),
            (["response_mode": "fragment"], "invalid_request"),
            (["request_uri": "urn:x"], "request_not_supported"),
            (["code_challenge": nil], "invalid_request"),
            (["code_challenge_method": "plain"], "invalid_request"),
            (["code_challenge_method": nil], "invalid_request"),
            (["code_challenge": "short"], "invalid_request"),
            (["resource": nil], "invalid_target"),
            (["resource": "https://gw.example/other"], "invalid_target"),
            (["scope": " "], "invalid_scope"),
            (["scope": "a\"b"], "invalid_scope"),
            (["dpop_jkt": "abc"], "invalid_request"),
            (["state": String(repeating: "s", count: 1025)], "invalid_request")
        ] as [([String: String?], String)])
    func theRestGoesBackToTheClient(_ changes: [String: String?], _ code: String) {
        do {
            _ = try Self.read(changes)
            Issue.record("accepted \(changes)")
        } catch {
            #expect(error.code == code, "\(changes): \(error)")
        }
    }

    @Test func theAnswerIsAddedToTheRedirectURIsQuery() {
        #expect(
            AuthorizationRequest.response(to: "http://127.0.0.1/cb", [("code", "c 1"), ("iss", "https://gw/")])
                == "http://127.0.0.1/cb?code=c+1&iss=https%3A%2F%2Fgw%2F")
        #expect(AuthorizationRequest.response(to: "https://a/cb?x=1", [("error", "e")]) == "https://a/cb?x=1&error=e")
    }
}
