import Foundation
import JOSE
import Logging
import Reactor

@testable import Gateway

/// One worker over the in-memory transport, from a config text (no sockets, memory stores).
/// `wallClock`: a `ManualClock` for tests that move time.
func testWorker(_ yaml: String, wallClock: any WallClock = SystemClock(), loginShared: LoginShared = LoginShared())
    throws -> Worker
{
    let config = try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get()
    return Worker(
        id: 0, config: config, log: Logger(label: "test"), processPrefix: "t",
        stores: StoreBackend(.memory, replayCapacity: 100, loginShared: loginShared), wallClock: wallClock)
}

/// Makes `key`'s public half the key set of the worker's issuer `issuer`.
func publishIssuerKey(_ key: JWK, issuer: String = "one", on worker: Worker) throws {
    let set = try JWKSet(bytes: Array(JWKSet(keys: [key]).publicJSON().utf8))
    worker.tokens.issuerKeys.update(issuer, set)
}

/// An access token of `https://idp.one` for audience `api`, signed ES256 with `key`: a fresh
/// `jti`, `iat` now, `exp` (and `nbf`, if given) relative to now, then `extra` claims.
func testAccessToken(
    key: JWK, now: Int64, sub: String = "alice", exp: Int64 = 3600, nbf: Int64? = nil,
    extra: KeyValuePairs<String, JSONValue> = [:]
) throws -> String {
    var c = JSONObject()
    c["iss"] = .string("https://idp.one")
    c["aud"] = .string("api")
    c["sub"] = .string(sub)
    c["jti"] = .string(Base64URL.encode(SecureRandom.bytes(8)))
    c["iat"] = .number(String(now))
    c["exp"] = .number(String(now + exp))
    if let nbf { c["nbf"] = .number(String(now + nbf)) }
    for (name, value) in extra { c[name] = value }
    return try JWSSigner.sign(claims: c, alg: .ES256, key: key)
}

/// Asks the worker's forward-auth endpoint about `GET https://<host><path>`, from the
/// trusted proxy 10.1.2.3 (or on `connection`).
func askForwardAuth(
    _ worker: Worker, host: String = "api.example", _ path: String, _ fields: [(name: String, value: String)],
    connection: ClientConnection? = nil
) -> InMemoryTransport {
    let (exchange, transport) = InMemoryTransport.exchange(
        "GET", "/_tokengate/forward-auth",
        fields: [
            ("Host", "tokengate"), ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", "https"),
            ("X-Forwarded-Host", host), ("X-Forwarded-Uri", path)
        ] + fields, peer: "10.1.2.3", connection: connection)
    worker.handle(exchange)
    return transport
}

/// Config tests that read a session key from `${SK}` and key files under /etc/tg.
protocol ConfigParsing {}

extension ConfigParsing {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(
            yaml: yaml, environment: ["SK": "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="], baseDirectory: "/etc/tg",
            cores: 2)
    }

    /// Every problem the parser finds, as check-config prints them; "" when the config is valid.
    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }
}
