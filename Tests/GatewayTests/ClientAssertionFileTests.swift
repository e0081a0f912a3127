import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway

/// `auth: client_assertion_file` (RFC 7523 §2.2): the assertion is the file's current
/// content — read again when the file changes or its `exp` nears, refused when it cannot be
/// read or has expired, never sent stale — and the config refuses a client without one.
@Suite("Client assertion from a file (RFC 7523 §2.2)")
struct ClientAssertionFileTests: ConfigParsing {
    static let now: Int64 = 1_800_000_000

    /// A fresh directory for one test.
    static func directory() -> String {
        let dir = NSTemporaryDirectory() + "tg-assertion-\(getpid())-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A JWT as a workload-identity issuer would mint it (signed with some key: the gateway
    /// never verifies it).
    static func token(sub: String, exp: Int64?) throws -> String {
        var claims = JSONObject(["iss": .string("https://k8s.example"), "sub": .string(sub), "aud": .string("as")])
        if let exp { claims["exp"] = .number(String(exp)) }
        return try JWSSigner.sign(claims: claims, alg: .ES256, key: JWK.generate(for: .ES256, kid: "k8s"))
    }

    /// Writes `text` as a new file swapped in by rename, as the kubelet's symlink swap does.
    static func rotate(_ path: String, _ text: String) throws {
        let next = path + ".next"
        try Data(text.utf8).write(to: URL(fileURLWithPath: next))
        _ = rename(next, path)
    }

    @Test func sendsTheFilesContentTrimmedAsTheAssertion() throws {
        let path = Self.directory() + "/token"
        let jwt = try Self.token(sub: "a", exp: Self.now + 3600)
        try Self.rotate(path, jwt + "\n")
        let auth = ClientAuthentication.clientAssertion(clientID: "web", source: ClientAssertionFile(path: path))
        let c = try auth.credentials(audience: "ignored", now: Self.now)
        #expect(c.headers.isEmpty)
        #expect(c.form.map(\.0) == ["client_id", "client_assertion_type", "client_assertion"])
        let form = Dictionary(uniqueKeysWithValues: c.form)
        #expect(form["client_id"] == "web")
        #expect(form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        #expect(form["client_assertion"] == jwt)
    }

    @Test func aRotatedFileIsReadFromTheNextSecondOn() throws {
        let path = Self.directory() + "/token"
        let first = try Self.token(sub: "first", exp: Self.now + 3600)
        let second = try Self.token(sub: "second", exp: Self.now + 3600)
        try Self.rotate(path, first)
        let file = ClientAssertionFile(path: path)
        #expect(try file.assertion(now: Self.now) == first)
        try Self.rotate(path, second)
        // The file is looked at no more than once a second.
        #expect(try file.assertion(now: Self.now) == first)
        #expect(try file.assertion(now: Self.now + 1) == second)
        #expect(try file.assertion(now: Self.now + 2) == second)
    }

    @Test func anAssertionNearItsExpIsReadAgainWithoutWaitingForTheSecond() throws {
        let path = Self.directory() + "/token"
        let short = try Self.token(sub: "short", exp: Self.now + 10)
        let next = try Self.token(sub: "next", exp: Self.now + 3600)
        try Self.rotate(path, short)
        let file = ClientAssertionFile(path: path)
        #expect(try file.assertion(now: Self.now) == short)
        try Self.rotate(path, next)
        // Within the margin of exp: the file is read again, and its new content sent.
        #expect(try file.assertion(now: Self.now + 10 - ClientAssertionFile.margin) == next)
    }

    @Test func anExpiredAssertionIsRefusedNotSent() throws {
        let path = Self.directory() + "/token"
        try Self.rotate(path, try Self.token(sub: "a", exp: Self.now + 10))
        let file = ClientAssertionFile(path: path)
        #expect(try file.assertion(now: Self.now).isEmpty == false)
        // The same file, now past its exp (nothing rotated it): refused, each time asked.
        for later in [Self.now + 10, Self.now + 11, Self.now + 100] {
            #expect(throws: ClientAssertionFile.Unavailable.self) { try file.assertion(now: later) }
            do {
                _ = try file.assertion(now: later)
            } catch let e as ClientAssertionFile.Unavailable {
                #expect(e.code == .expired && e.description.contains(path) && e.description.contains("expired"))
            }
        }
        // Rotated at last: sent again.
        let fresh = try Self.token(sub: "b", exp: Self.now + 3600)
        try Self.rotate(path, fresh)
        #expect(try file.assertion(now: Self.now + 101) == fresh)
    }

    @Test func anExpiredFileAtFirstReadIsRefused() throws {
        let path = Self.directory() + "/token"
        try Self.rotate(path, try Self.token(sub: "a", exp: Self.now - 1))
        #expect(
            throws: ClientAssertionFile.Unavailable(
                code: .expired, path: path, reason: "exp \(Self.now - 1) is past (now \(Self.now), margin 5 s)")
        ) {
            try ClientAssertionFile(path: path).assertion(now: Self.now)
        }
    }

    @Test func anUnreadableFileIsRefusedEvenWithAGoodOneHeldBefore() throws {
        let path = Self.directory() + "/token"
        try Self.rotate(path, try Self.token(sub: "a", exp: Self.now + 3600))
        let file = ClientAssertionFile(path: path)
        _ = try file.assertion(now: Self.now)
        try FileManager.default.removeItem(atPath: path)
        #expect(throws: ClientAssertionFile.Unavailable.self) { try file.assertion(now: Self.now + 1) }
        do {
            _ = try file.assertion(now: Self.now + 2)
        } catch let e as ClientAssertionFile.Unavailable {
            #expect(e.code == .unreadable)
        }
        // A directory where the file was: unreadable too.
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(throws: ClientAssertionFile.Unavailable.self) { try file.assertion(now: Self.now + 3) }
    }

    @Test(arguments: [
        ("", ClientAssertionFile.Unavailable.Code.unreadable),
        ("  \n", .unreadable),
        ("not a jwt", .notAJWT),
        ("a.b.c", .notAJWT),
        ("x × (maxBytes + 1)", .unreadable)
    ])
    func contentThatIsNoAssertionIsRefused(content: String, code: ClientAssertionFile.Unavailable.Code) throws {
        let path = Self.directory() + "/token"
        let tooLarge = String(repeating: "x", count: ClientAssertionFile.maxBytes + 1)
        try Self.rotate(path, content == "x × (maxBytes + 1)" ? tooLarge : content)
        #expect(throws: ClientAssertionFile.Unavailable.self) {
            try ClientAssertionFile(path: path).assertion(now: Self.now)
        }
        do {
            _ = try ClientAssertionFile(path: path).assertion(now: Self.now)
        } catch let e as ClientAssertionFile.Unavailable {
            #expect(e.code == code)
        }
    }

    @Test func aJWTWithoutExpIsRefused() throws {
        let path = Self.directory() + "/token"
        try Self.rotate(path, try Self.token(sub: "a", exp: nil))
        do {
            _ = try ClientAssertionFile(path: path).assertion(now: Self.now)
            Issue.record("a JWT without exp was taken")
        } catch let e as ClientAssertionFile.Unavailable {
            #expect(e.code == .notAJWT && e.reason.contains("exp"))
        }
    }

    // MARK: config

    func yaml(_ client: String) -> String {
        """
        issuers:
          one: { issuer: "https://idp.example", jwks_uri: "https://idp.example/jwks", audiences: [api] }
        clients:
          gw: { client_id: tokengate, \(client) }
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - { match: { path_prefix: / }, upstream: a, auth: bearer, issuers: [one] }
        """
    }

    @Test func theConfigTakesAFileHoldingAJWT() throws {
        let dir = Self.directory()
        try Self.rotate(dir + "/token", try Self.token(sub: "a", exp: Self.now + 3600))
        let config = try parse(yaml("auth: client_assertion_file, assertion_file: \(dir)/token")).get()
        guard case .clientAssertion(let id, let source) = config.clients["gw"]?.authentication else {
            Issue.record("not a client assertion: \(String(describing: config.clients["gw"]?.authentication))")
            return
        }
        #expect(id == "tokengate" && (source as? ClientAssertionFile)?.path == dir + "/token")
    }

    @Test func theConfigRefusesAClientWithoutAReadableAssertionFile() throws {
        let dir = Self.directory()
        try Self.rotate(dir + "/opaque", "not-a-jwt")
        #expect(
            problems(yaml("auth: client_assertion_file")).contains(
                "client_assertion_file needs assertion_file (the path of the JWT to send)"))
        let missing = problems(yaml("auth: client_assertion_file, assertion_file: \(dir)/missing"))
        #expect(missing.contains("clients.gw.assertion_file") && missing.contains("unreadable: cannot be read"))
        // A relative path is the config directory's.
        #expect(problems(yaml("auth: client_assertion_file, assertion_file: token")).contains("/etc/tg/token"))
        #expect(
            problems(yaml("auth: client_assertion_file, assertion_file: \(dir)/opaque")).contains(
                "not_a_jwt: is not a JWT"))
    }
}
