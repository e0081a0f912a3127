import ArgumentParser
import Foundation
import JOSE

/// `tokengate keys generate`: a new signing key — the private JWK to a file (mode 0600),
/// the public JWK Set on standard output.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage signing keys.",
        subcommands: [Generate.self, Thumbprint.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Generate a key pair.")
        @Option(help: "ES256, ES384, ES512, RS256, PS256 or EdDSA.") var alg: String = "ES256"
        @Option(help: "Key id (default: the RFC 7638 thumbprint).") var kid: String?
        @Option(help: "Where to write the private JWK.") var out: String

        func run() throws {
            guard let algorithm = JWSAlgorithm(rawValue: alg), !algorithm.isSymmetric else {
                throw ValidationError("--alg must be one of ES256, ES384, ES512, RS256, PS256, EdDSA")
            }
            var key = try JWK.generate(for: algorithm, kid: kid)
            if kid == nil {
                key = try JWK(
                    object: {
                        var o = try key.privateJWK()
                        o["kid"] = .string(key.thumbprint())
                        return o
                    }())
            }
            let privateText = JSONSerializer.serialize(.object(try key.privateJWK())) + "\n"
            guard
                FileManager.default.createFile(
                    atPath: out, contents: Data(privateText.utf8),
                    attributes: [.posixPermissions: 0o600])
            else {
                throw ValidationError("cannot write \(out)")
            }
            print(JWKSet(keys: [key]).publicJSON())
        }
    }

    /// `tokengate keys thumbprint --key k.jwk`: the RFC 7638 thumbprint, e.g. the `cnf.jkt`
    /// of tokens bound to a DPoP key.
    struct Thumbprint: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a key's RFC 7638 SHA-256 thumbprint.")
        @Option(help: "A JWK file (public or private).") var key: String

        func run() throws {
            print(try JWK(json: try String(contentsOfFile: key, encoding: .utf8)).thumbprint())
        }
    }
}
