import Testing

@testable import Gateway
@testable import Reactor

/// The decision endpoint's 400 carries `Problem.description` to whoever called it: malformed
/// descriptions of the original request get fixed, client-safe words (the header's name at
/// most), never the value sent, a Swift type, a file path or a parser's dump — those are for
/// the log (`detail`).
@Suite("Decision endpoint: a 400 says nothing of the gateway's insides")
struct DecisionProblemTests {
    static let hostile = "http://\u{1}evil<script>/../../etc/passwd%00"

    static func problem(
        _ fields: [(name: String, value: String)], style: DecisionRequest.Style, method: String = "GET",
        trusted: Bool = true, secret: String? = nil
    ) -> DecisionRequest.Problem? {
        let head = HTTPRequestHead(
            methodName: method, target: "/_tokengate/auth", version: (1, 1), fields: HTTP1Fields(fields))
        let r = DecisionRequest.read(
            head, style: style, connectionScheme: "http", peer: "10.0.0.1", peerTrusted: trusted,
            secret: secret.map { Array($0.utf8) })
        guard case .failure(let p) = r else { return nil }
        return p
    }

    static let malformed: [(fields: [(name: String, value: String)], style: DecisionRequest.Style)] = [
        ([("X-Original-URL", hostile), ("X-Original-Method", "GET")], .nginx),
        ([("X-Original-URL", "/etc/passwd"), ("X-Original-Method", "GET")], .nginx),
        ([("X-Original-URL", "https://app/x"), ("X-Original-Method", "G E\u{7f}T")], .nginx),
        ([("X-Original-URL", "https://app/x"), ("X-Original-Method", "GET"), ("X-Original-Method", "PUT")], .nginx),
        ([("X-Original-URL", "https://app/x")], .nginx),
        (
            [
                ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", hostile), ("X-Forwarded-Host", "app"),
                ("X-Forwarded-Uri", "/x")
            ], .forwardAuth
        ),
        (
            [
                ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", hostile),
                ("X-Forwarded-Uri", "/x")
            ], .forwardAuth
        ),
        (
            [
                ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "app"),
                ("X-Forwarded-Uri", "x/../../etc/passwd")
            ], .forwardAuth
        )
    ]

    @Test func eachMalformedDescriptionGetsAFixedClientSafeText() throws {
        for (fields, style) in Self.malformed {
            let p = try #require(Self.problem(fields, style: style), "\(fields) was accepted")
            let text = p.description
            #expect(!text.isEmpty)
            for leak in [
                "evil", "script", "passwd", ".swift", "Swift.", "Gateway.", "Error(", "Optional(", "/work/", "\u{1}",
                "G E"
            ] {
                #expect(!text.contains(leak), "\(text) contains \(leak)")
            }
            // The detail keeps what the log needs.
            #expect(!p.detail.isEmpty)
        }
    }

    @Test func aWrongSecretOrAnUntrustedPeerIsNotToldWhatWasSent() throws {
        let nginx = [("X-Original-URL", "https://app/x"), ("X-Original-Method", "GET")]
        let wrong = try #require(
            Self.problem(
                nginx + [(DecisionConfig.secretHeader, "guess-0123456789")], style: .nginx,
                secret: "s3cr3t-0123456789abcdef"))
        #expect(!wrong.description.contains("guess") && !wrong.description.contains("s3cr3t"))
        let untrusted = try #require(Self.problem(nginx, style: .nginx, trusted: false))
        #expect(!untrusted.description.contains("10.0.0.1") && !untrusted.description.contains("X-Original"))
    }
}
