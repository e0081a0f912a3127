import Testing

@testable import ExtAuthz

/// The CheckResponse bytes read back as the messages Envoy reads: the status, which of the
/// three answers, and each header change with its append action.
@Suite("ext_authz: writing a CheckResponse")
struct CheckResponseWriterTests {
    static func read(_ bytes: [UInt8]) throws -> Envoy_Service_Auth_V3_CheckResponse {
        try Envoy_Service_Auth_V3_CheckResponse(serializedBytes: bytes)
    }

    @Test func allowedSetsReplacesAndRemoves() throws {
        let r = try Self.read(
            CheckResponseWriter.allowed(
                set: [("x-forwarded-user", "alice")], remove: ["authorization", "x-forwarded-email"],
                responseFields: [("set-cookie", "s=1; Secure"), ("dpop-nonce", "n1")]))
        #expect(r.status.code == 0)
        guard case .okResponse(let ok)? = r.httpResponse else {
            Issue.record("not an OkHttpResponse")
            return
        }
        #expect(ok.headers.map { "\($0.header.key)=\($0.header.value)" } == ["x-forwarded-user=alice"])
        // A client's forged copy is replaced, never appended to.
        #expect(ok.headers.allSatisfy { $0.appendAction == .overwriteIfExistsOrAdd })
        #expect(ok.headersToRemove == ["authorization", "x-forwarded-email"])
        #expect(ok.responseHeadersToAdd.map(\.header.key) == ["set-cookie", "dpop-nonce"])
    }

    @Test func deniedCarriesTheClientsAnswer() throws {
        let r = try Self.read(
            CheckResponseWriter.denied(
                .unauthenticated, message: "invalid_token", httpStatus: 401,
                fields: [("www-authenticate", "Bearer error=\"invalid_token\""), ("content-type", "application/json")],
                body: "{\"error\":\"invalid_token\"}"))
        #expect(r.status.code == 16 && r.status.message == "invalid_token")
        guard case .deniedResponse(let denied)? = r.httpResponse else {
            Issue.record("not a DeniedHttpResponse")
            return
        }
        #expect(denied.status.code == 401)
        #expect(denied.headers.map(\.header.key) == ["www-authenticate", "content-type"])
        #expect(denied.body == "{\"error\":\"invalid_token\"}")
    }

    @Test func anOutageIsAnErrorResponse() throws {
        let r = try Self.read(
            CheckResponseWriter.denied(
                .unavailable, message: "store unavailable", httpStatus: 503, fields: [], body: "", asError: true))
        #expect(r.status.code == 14)
        guard case .errorResponse(let e)? = r.httpResponse else {
            Issue.record("not an error_response")
            return
        }
        #expect(e.status.code == 503)
    }
}
