import Testing

@testable import Gateway

@Suite("Path normalization (RFC 3986 §6.2.2) — the bypass surface")
struct PathNormalizerTests {
    func normal(_ t: String) -> String? {
        if case .success(let n) = PathNormalizer.normalize(target: t) { return n.path }
        return nil
    }
    func rejection(_ t: String) -> PathNormalizer.Rejection? {
        if case .failure(let r) = PathNormalizer.normalize(target: t) { return r }
        return nil
    }

    @Test(
        "normal forms",
        arguments: [
            ("/", "/"), ("/a/b", "/a/b"), ("/a/b/", "/a/b/"), ("//a///b", "/a/b"), ("/a/./b", "/a/b"),
            ("/a/b/.", "/a/b/"), ("/a/b/..", "/a/"), ("/a/b/../c", "/a/c"), ("/%7Euser", "/~user"),
            ("/%41%62c", "/Abc"), ("/a%2e/b", "/a./b"), ("/a/%2e%2e/b", "/b"), ("/a/%2E/b", "/a/b"),
            ("/x%20y", "/x%20y"), ("/x%3a", "/x%3A"), ("/caf%C3%A9", "/caf%C3%A9"), ("/a\"b", "/a%22b"),
            ("/a|b{c}", "/a%7Cb%7Bc%7D"), ("/.well-known/x", "/.well-known/x"),
            ("/%2e", "/"), ("/.", "/"), ("/a/..", "/")
        ])
    func normalizes(_ input: String, _ expected: String) {
        #expect(normal(input) == expected)
    }

    @Test(
        "refused inputs",
        arguments: [
            ("/a/%2F/b", PathNormalizer.Rejection.encodedSlash), ("/a%2fb", .encodedSlash),
            ("/a\\b", .backslash), ("/a%5Cb", .backslash), ("/a%5cb", .backslash),
            ("/a%00", .controlCharacter), ("/a%0d%0aX: y", .controlCharacter), ("/a\u{01}", .controlCharacter),
            ("/a b", .controlCharacter), ("/a%", .badPercentEncoding), ("/a%4", .badPercentEncoding),
            ("/a%zz", .badPercentEncoding), ("/..", .escapesRoot), ("/../etc/passwd", .escapesRoot),
            ("/a/../..", .escapesRoot), ("/%2e%2e/x", .escapesRoot), ("/a/%2e%2E/%2e%2e/x", .escapesRoot),
            ("/a/..;/b", .pathParameter), ("/a/.;x/b", .pathParameter), ("/a;b=c", .pathParameter),
            ("/secret;", .pathParameter),
            ("/secret%3b", .pathParameter), ("/admin;jsessionid=1/x", .pathParameter), ("/a#frag", .fragment),
            ("/" + String(repeating: "a/", count: 40) + String(repeating: "../", count: 33), .tooManyDotSegments),
            ("a/b", .notOriginForm), ("http://evil/a", .notOriginForm), ("*", .notOriginForm), ("", .notOriginForm),
            ("/a?b#c", .fragment), ("/a?x=%00", .controlCharacter), ("/a?x=%G1", .badPercentEncoding),
            ("/a?x y", .controlCharacter)
        ])
    func refuses(_ input: String, _ why: PathNormalizer.Rejection) {
        #expect(rejection(input) == why)
    }

    @Test func queryIsKeptRaw() throws {
        guard case .success(let n) = PathNormalizer.normalize(target: "/a/../b?x=%2F&y=a/../b") else {
            Issue.record("refused")
            return
        }
        #expect(n.path == "/b")
        #expect(n.query == "x=%2F&y=a/../b")
        #expect(n.dotDotOrigins == ["/a/"])
    }

    @Test func idempotent() {
        for t in ["//a/./b/../c/%7e", "/x%3a%41/", "/a|b"] {
            let once = normal(t)!
            #expect(normal(once) == once)
        }
    }
}
