import ArgumentParser
import Foundation
import JOSE
import OAuth

/// `tokengate dpop proof`: DPoP proofs (RFC 9449) from a private JWK, to try a `dpop` route
/// with curl — or, with --count, a file of unique proofs for a load test.
struct DPoPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dpop", abstract: "DPoP (RFC 9449) client tools.",
        subcommands: [Proof.self])

    struct Proof: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a DPoP proof (one per line with --count).",
            discussion:
                "curl -H \"Authorization: DPoP $TOKEN\" -H \"DPoP: $(tokengate dpop proof --key k.jwk --url URL --token $TOKEN)\" URL"
        )
        @Option(help: "The private JWK (tokengate keys generate).") var key: String
        @Option(help: "The proof's algorithm (default: the key's alg, else ES256).") var alg: String?
        @Option(help: "HTTP method (htm).") var method: String = "GET"
        @Option(help: "The request URL (htu; query and fragment are dropped).") var url: String
        @Option(help: "The access token the proof goes with (adds ath).") var token: String?
        @Option(help: "A server nonce (DPoP-Nonce) to include.") var nonce: String?
        @Option(help: "How many proofs (each with its own jti).") var count: Int = 1
        @Option(help: "iat offset in seconds from now (e.g. -30).") var iatOffset: Int = 0

        func run() throws {
            let jwk = try JWK(json: try String(contentsOfFile: key, encoding: .utf8))
            guard let algorithm = JWSAlgorithm(rawValue: alg ?? jwk.alg ?? "ES256") else {
                throw ValidationError("unknown --alg")
            }
            guard count >= 1 else { throw ValidationError("--count must be at least 1") }
            let signer = try DPoPProofSigner(key: jwk, alg: algorithm)
            let now = Int64(Date().timeIntervalSince1970) + Int64(iatOffset)
            var out = ""
            out.reserveCapacity(min(count, 1 << 16) * 700)
            for _ in 0..<count {
                out += try signer.proof(method: method, url: url, accessToken: token, nonce: nonce, now: now)
                out += "\n"
                if out.utf8.count > 1 << 22 {
                    FileHandle.standardOutput.write(Data(out.utf8))
                    out = ""
                }
            }
            FileHandle.standardOutput.write(Data(out.utf8))
        }
    }
}
