import ArgumentParser
import Foundation
import JOSE
import Reactor

/// `tokengate jwt decode | verify | sign`: developer tools over the same JOSE code the
/// gateway runs.
struct JWTCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jwt", abstract: "Decode, verify or sign JWTs.",
        subcommands: [Decode.self, Verify.self, Sign.self])

    struct Decode: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a JWT's header and claims without verifying it.")
        @Argument(help: "The token; read from standard input when absent or -.") var token: String?

        func run() throws {
            let jws = try parseToken(try readToken(token))
            print("header: \(JSONSerializer.serialize(.object(jws.header.object)))")
            if let claims = try? jws.claims() {
                print("claims: \(JSONSerializer.serialize(.object(claims)))")
            } else {
                print("payload: \(String(decoding: jws.payload, as: UTF8.self))")
            }
            print("signature: NOT verified (use `tokengate jwt verify`)")
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify a JWT; exit 0 if valid, 1 with the reason if not.")
        @Option(help: "JWK Set: a file, or an http(s) URL.") var jwks: String
        @Option(help: "Required issuer (iss).") var iss: String?
        @Option(help: "Accepted audience (aud); repeatable.") var aud: [String] = []
        @Option(help: "Allowed algorithm; repeatable (default: RS256, PS256, ES256, EdDSA).") var alg: [String] = []
        @Option(help: "Required typ header, e.g. at+jwt.") var typ: String?
        @Option(help: "Allowed clock skew in seconds.") var leeway: Int64 = 30
        @Argument(help: "The token; read from standard input when absent or -.") var token: String?

        func run() throws {
            let keys: JWKSet
            let algs: Set<JWSAlgorithm>
            do {
                keys = try JWKSet(bytes: try loadJWKS(jwks))
                algs = try Set(
                    (alg.isEmpty ? ["RS256", "PS256", "ES256", "EdDSA"] : alg).map { name in
                        guard let a = JWSAlgorithm(rawValue: name) else {
                            throw ValidationError("unknown algorithm \(name)")
                        }
                        return a
                    })
            } catch {
                FileHandle.standardError.write(Data("tokengate: \(error)\n".utf8))
                throw ExitCode(2)
            }
            var policy = JWTClaimsPolicy(issuer: iss, audiences: aud, leeway: leeway, type: typ)
            policy.requireExpiry = true
            do {
                let verified = try JWTVerifier(keys: keys, algorithms: algs, policy: policy)
                    .verify(try readToken(token), now: Int64(Date().timeIntervalSince1970))
                print("valid (alg \(verified.header.alg.rawValue), kid \(verified.key.kid ?? "-"))")
                print(JSONSerializer.serialize(.object(verified.claims)))
            } catch let e as JOSEError {
                print("invalid: \(e)")
                throw ExitCode(1)
            }
        }
    }

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign claims with a private JWK (for development and tests).")
        @Option(help: "Private JWK file (from `tokengate keys generate`).") var key: String
        @Option(help: "Claims as a JSON object.") var claims: String
        @Option(help: "Algorithm (default: the key's alg).") var alg: String?
        @Option(help: "typ header, e.g. at+jwt.") var typ: String?
        @Option(help: "Seconds until exp, added when the claims have no exp.") var expIn: Int64 = 300

        func run() throws {
            let jwk = try JWK(json: try String(contentsOfFile: key, encoding: .utf8))
            guard let name = alg ?? jwk.alg, let algorithm = JWSAlgorithm(rawValue: name) else {
                throw ValidationError("give --alg (the key has no alg)")
            }
            guard case .object(var body) = try JSONParser.parse(claims) else {
                throw ValidationError("--claims must be a JSON object")
            }
            let now = Int64(Date().timeIntervalSince1970)
            if body["iat"] == nil { body["iat"] = .number(String(now)) }
            if body["exp"] == nil { body["exp"] = .number(String(now + expIn)) }
            // RFC 9068 §2.2 requires a jti, which a hand-written claims object rarely has.
            if let typ, JWSHeader.typesMatch(typ, "at+jwt"), body["jti"] == nil {
                body["jti"] = .string(Base64URL.encode(SecureRandom.bytes(16)))
            }
            var header = JSONObject()
            if let typ { header["typ"] = .string(typ) }
            print(try JWSSigner.sign(claims: body, header: header, alg: algorithm, key: jwk))
        }
    }
}

private func readToken(_ argument: String?) throws -> String {
    if let argument, argument != "-" { return argument }
    let data = FileHandle.standardInput.readDataToEndOfFile()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

private func parseToken(_ token: String) throws -> CompactJWS {
    do { return try CompactJWS(token) } catch let e as JOSEError {
        print("invalid: \(e)")
        throw ExitCode(1)
    }
}

/// A JWKS from a file, or from an http(s) URL through the gateway's own async client.
private func loadJWKS(_ source: String) throws -> [UInt8] {
    guard source.hasPrefix("http://") || source.hasPrefix("https://") else {
        guard let data = FileManager.default.contents(atPath: source) else {
            throw ValidationError("cannot read \(source)")
        }
        return Array(data)
    }
    let loop = EventLoop()
    let fetcher = HTTPFetcher(loop: loop)
    var result: Result<FetchResponse, FetchError>?
    fetcher.fetch(FetchRequest(url: source, headers: ["Accept: application/json"])) { r in
        result = r
        loop.stop()
    }
    loop.run()
    switch result {
    case .success(let resp) where resp.status == 200: return resp.body
    case .success(let resp): throw ValidationError("\(source) answered \(resp.status)")
    case .failure(let e): throw ValidationError("cannot fetch \(source): \(e)")
    case nil: throw ValidationError("cannot fetch \(source)")
    }
}
