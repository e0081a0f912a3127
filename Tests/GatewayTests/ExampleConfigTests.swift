import Foundation
import JOSE
import TestSupport
import Testing

@testable import Gateway

/// Every config a reader may copy passes check-config: each file in config/, and each
/// ```yaml block of README.md and docs/*.md that is a whole config.
///
/// Blocks that are not whole configs are marked on the line before their fence, with an
/// HTML comment GitHub does not show, and skipped here:
/// - `<!-- fragment -->`: part of a tokengate config (a few keys, to be put into one);
/// - `<!-- not tokengate -->`: another program's YAML (Kubernetes, Traefik, Envoy).
///
/// A config names its files under /etc/tokengate/; the test makes each one (by its name:
/// `.jwk` a private key, `.secret`/`.keys`/`session.key` a random secret, `*ca*.pem` a CA,
/// `.pem`/`.crt`/`.key` a certificate and its key, `pages` the shipped config/pages) in a
/// temporary directory and reads the config from there. Every `${VAR}` is set to a
/// 32-byte base64 value, which each secret accepts.
@Suite("Config: the examples in config/ and the docs pass check-config")
struct ExampleConfigTests {
    static let fragmentMarker = "<!-- fragment -->"
    static let otherProgramMarker = "<!-- not tokengate -->"
    static let secret = "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="

    struct Example: CustomTestStringConvertible {
        let source: String
        let yaml: String
        let baseDirectory: String
        var testDescription: String { source }
    }

    static let configFiles: [Example] = {
        let dir = repositoryRoot.appendingPathComponent("config")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().compactMap { name in
            guard let text = try? String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8) else {
                return nil
            }
            return Example(source: "config/\(name)", yaml: text, baseDirectory: dir.path)
        }
    }()

    static let documentBlocks: [Example] = {
        let docs = repositoryRoot.appendingPathComponent("docs")
        let pages = ((try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? [])
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        return (["README.md"] + pages).flatMap { page in
            guard let text = try? String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
            else { return [Example]() }
            return wholeConfigBlocks(text).map {
                Example(source: "\(page) line \($0.line)", yaml: $0.yaml, baseDirectory: repositoryRoot.path)
            }
        }
    }()

    /// The ```yaml blocks of a Markdown text that carry no marker, with the line of their fence.
    static func wholeConfigBlocks(_ text: String) -> [(line: Int, yaml: String)] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var out: [(Int, String)] = []
        var i = 0
        while i < lines.count {
            guard lines[i].trimmingCharacters(in: .whitespaces) == "```yaml" else {
                i += 1
                continue
            }
            let fence = i
            var body: [Substring] = []
            i += 1
            while i < lines.count, lines[i].trimmingCharacters(in: .whitespaces) != "```" {
                body.append(lines[i])
                i += 1
            }
            i += 1
            let before = fence > 0 ? lines[fence - 1].trimmingCharacters(in: .whitespaces) : ""
            if before != fragmentMarker && before != otherProgramMarker {
                out.append((fence + 1, body.joined(separator: "\n") + "\n"))
            }
        }
        return out
    }

    @Test func theDocsHaveWholeConfigsToCheck() {
        // A marker on every block by mistake would leave this suite nothing to check.
        #expect(Self.documentBlocks.count >= 5)
        #expect(Self.configFiles.count >= 5)
    }

    @Test(arguments: configFiles) func configFilePassesCheckConfig(_ example: Example) throws {
        try Self.check(example)
    }

    @Test(arguments: documentBlocks) func documentedConfigPassesCheckConfig(_ example: Example) throws {
        try Self.check(example)
    }

    static func check(_ example: Example) throws {
        let files = try ExampleFiles.shared()
        let yaml = example.yaml.replacingOccurrences(of: "/etc/tokengate/", with: files.directory + "/")
        var environment: [String: String] = [:]
        for name in variables(in: yaml) { environment[name] = secret }
        for path in referencedFiles(in: example.yaml) { try files.make(path) }
        if case .failure(let error) = ConfigParser.parse(
            yaml: yaml, environment: environment, baseDirectory: example.baseDirectory, cores: 2)
        {
            Issue.record(
                "\(example.source) does not pass check-config (mark a partial snippet with \(fragmentMarker)):\n\(error)"
            )
        }
    }

    /// The names of `${NAME}` and `${NAME:-default}`.
    static func variables(in text: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            rest = rest[start.upperBound...]
            let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if !name.isEmpty { names.insert(String(name)) }
        }
        return names
    }

    /// The names under the fixture directory a config refers to.
    static func referencedFiles(in text: String) -> Set<String> {
        let marker = ExampleFiles.placeholder
        var names: Set<String> = []
        var rest = Substring(text)
        while let start = rest.range(of: marker) {
            rest = rest[start.upperBound...]
            let name = rest.prefix { !" \t\n,]}\"'#".contains($0) }
            if !name.isEmpty { names.insert(String(name)) }
        }
        return names
    }
}

/// The files a documented config names under /etc/tokengate/, made once per test run in a
/// fresh temporary directory.
final class ExampleFiles: @unchecked Sendable {
    static let placeholder = "/etc/tokengate/"
    let directory: String
    private let lock = NSLock()
    private var made: Set<String> = []

    private static let instance = Result { try ExampleFiles() }
    static func shared() throws -> ExampleFiles { try instance.get() }

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokengate-examples-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // One self-signed CA certificate serves as every CA, server and client certificate:
        // the parser checks that each file loads and that a key fits its certificate.
        try ProcessRunner.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "\(directory)/.cert.key", "-out", "\(directory)/.cert.pem", "-days", "1",
                "-subj", "/CN=tokengate example", "-addext", "basicConstraints=critical,CA:TRUE"
            ], timeout: 20)
    }

    /// Makes `name` (a path under the directory) if it is not there yet.
    func make(_ name: String) throws {
        lock.lock()
        defer { lock.unlock() }
        guard made.insert(name).inserted else { return }
        let path = "\(directory)/\(name)"
        let base = (name as NSString).lastPathComponent
        let ext = (base as NSString).pathExtension
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        switch ext {
        case "jwk":
            let key = try JWK.generate(for: .ES256, kid: (base as NSString).deletingPathExtension)
            try write(JSONSerializer.serialize(.object(try key.privateJWK())), to: path)
        case "jwks":
            let key = try JWK.generate(for: .EdDSA, kid: (base as NSString).deletingPathExtension)
            try write(JWKSet(keys: [key]).publicJSON(), to: path)
        case "json" where base.hasPrefix("client-keys"):
            // signatures.NAME.keys.client_jwks: client id → that client's JWK Set.
            let key = try JWK.generate(for: .EdDSA, kid: "client-1")
            try write("{\"example-client\": \(JWKSet(keys: [key]).publicJSON())}", to: path)
        case "secret", "keys":
            try write(ExampleConfigTests.secret + "\n", to: path)
        case "key" where base.hasPrefix("session"):
            try write(ExampleConfigTests.secret + "\n", to: path)
        case "pem", "crt":
            try FileManager.default.copyItem(atPath: "\(directory)/.cert.pem", toPath: path)
        case "key":
            try FileManager.default.copyItem(atPath: "\(directory)/.cert.key", toPath: path)
        case "" where base == "pages":
            try FileManager.default.createSymbolicLink(
                atPath: path, withDestinationPath: repositoryRoot.appendingPathComponent("config/pages").path)
        default:
            Issue.record("an example names /etc/tokengate/\(name): teach ExampleFiles what such a file holds")
        }
    }

    private func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
