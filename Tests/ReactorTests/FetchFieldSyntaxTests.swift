import Testing

@testable import Reactor

/// No header line with CR, LF or NUL reaches libcurl, whatever built it: a token from an
/// AS's answer, a claims source, a bearer file, a PDP's metadata. The request is refused
/// before anything is sent, and the server never hears of it.
@Suite("HTTPFetcher: field syntax of what it sends")
struct FetchFieldSyntaxTests {
    /// Each source's hostile value, as the line or URL the gateway would build from it.
    static let hostileLines: [(source: String, line: String)] = [
        ("token answer", "Authorization: Bearer abc\r\nContent-Length: 0\r\n\r\nPOST /smuggled HTTP/1.1"),
        ("claims source", "Authorization: Bearer tok\nX-Injected: 1"),
        ("bearer file", "Authorization: Bearer tok\r"),
        ("NUL", "Authorization: Bearer tok\u{0}rest"),
        ("no colon", "Authorization Bearer tok"),
        ("bad name", "Bad Name: x")
    ]

    @Test(arguments: hostileLines.map(\.line))
    func aHeaderLineThatIsNoFieldLineIsNeverSent(_ line: String) throws {
        var heard = 0
        let h = try HTTPFetcherTests.Harness { _, req in
            heard += 1
            req.responder.respond(status: 200, body: [])
        }
        let r = h.run { f, done in
            f.fetch(FetchRequest(url: "http://127.0.0.1:\(h.port)/evaluation", headers: [line]), completion: done)
        }
        guard case .failure(let e)? = r else {
            Issue.record("the request was sent")
            return
        }
        #expect(e.kind == .refusedRequest)
        #expect(!e.description.contains("smuggled") && !e.description.contains("tok"))
        #expect(heard == 0)
    }

    /// A PDP's metadata names the endpoint: a URL with CR/LF or a space is never handed on.
    @Test(arguments: ["http://127.0.0.1:1/a\r\nX: y", "http://127.0.0.1:1/a b", "http://127.0.0.1:1/\u{0}"])
    func aURLWithControlsIsNeverSent(_ url: String) throws {
        let h = try HTTPFetcherTests.Harness { _, req in req.responder.respond(status: 200, body: []) }
        let r = h.run { f, done in f.fetch(FetchRequest(url: url), completion: done) }
        guard case .failure(let e)? = r else {
            Issue.record("no refusal")
            return
        }
        #expect(e.kind == .refusedRequest)
    }

    @Test func fieldLinesAndValuesAreCheckedByBytes() {
        #expect(FieldSyntax.isFieldLine("Authorization: Bearer eyJ.a-b_c~d+e/f=="))
        #expect(FieldSyntax.isFieldLine("X-Empty:"))
        // "\r\n" is one Swift Character, equal to neither "\r" nor "\n": bytes catch it.
        #expect(!FieldSyntax.isFieldValue("a\r\nb"))
        #expect(!FieldSyntax.isFieldValue("a\u{7F}"))
        #expect(FieldSyntax.isFieldValue("caf\u{E9} \tok"))
        #expect(!FieldSyntax.isFieldName(""))
        #expect(!FieldSyntax.isFieldName("a b"))
    }
}
