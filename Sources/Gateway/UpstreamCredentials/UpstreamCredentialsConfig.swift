import Foundation
import Yams

/// `upstreams.NAME.credentials`: a credential of the upstream's own that the gateway adds to
/// every request it sends there, in place of any copy the client sent: a static secret in a
/// header (read from a file, again as it rotates: `UpstreamSecretService`), or a token the
/// gateway gets for itself with the client credentials grant (RFC 6749 §4.4), sent as
/// `Authorization: Bearer` (RFC 6750 §2.1). docs/api-keys.md ("Credentials toward upstreams").
enum UpstreamCredentialsConfig: Sendable {
    case header(UpstreamSecretHeader)
    case clientCredentials(ClientCredentialsGrant)

    /// The field the credential goes in, lowercased: the client's copy is dropped.
    var fieldName: String {
        switch self {
        case .header(let h): h.name.lowercased()
        case .clientCredentials: "authorization"
        }
    }

    /// Whether it takes the place of the client's `Authorization`.
    var replacesAuthorization: Bool { fieldName == "authorization" }

    /// Fields a credential cannot go in: the request's framing, routing and cookies, the
    /// gateway's own fields (forwarded headers, trace context, signatures, proofs).
    static let reservedFields: Set<String> = APIKeySetConfig.reservedFields.union([
        "x-request-id", "signature", "signature-input", "content-digest", "grpc-timeout"
    ])
}

/// `credentials.header`: a static secret sent in a field of the upstream's choosing.
struct UpstreamSecretHeader: Sendable {
    var name = ""
    /// The secret's file, absolute; the field's value is its content, trimmed.
    var file = ""
    /// The value as read at load (the service keeps it current afterwards).
    var value = ""
}

/// A secret file's content as a field value: surrounding whitespace and line ends trimmed
/// (files end with a newline), then every byte a field-value byte (RFC 9110 §5.5): no CR,
/// LF or NUL can reach a header the gateway builds. A refusal never quotes the secret.
enum UpstreamSecretFile {
    static let maxBytes = 8 << 10

    static func read(_ path: String) -> Result<String, UpstreamSecretProblem> {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            return .failure(.init("\(path) is gone"))
        }
        // A device or a pipe would be read without end: only a regular file, of bounded size.
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            return .failure(.init("\(path) is not a regular file"))
        }
        if let size = attributes[.size] as? Int, size > maxBytes {
            return .failure(.init("\(path) holds more than \(maxBytes) bytes"))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(.init("cannot read \(path)"))
        }
        guard data.count <= maxBytes else { return .failure(.init("\(path) holds more than \(maxBytes) bytes")) }
        return value(Array(data)).mapError { UpstreamSecretProblem("\(path) \($0.description)") }
    }

    static func value(_ bytes: [UInt8]) -> Result<String, UpstreamSecretProblem> {
        func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return .failure(.init("is empty")) }
        let trimmed = bytes[first...last]
        if let bad = trimmed.firstIndex(where: { !($0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F)) }) {
            return .failure(.init("holds a control character (byte \(bad + 1)): a field value cannot carry it"))
        }
        guard let text = String(validating: trimmed, as: UTF8.self) else {
            return .failure(.init("is not UTF-8 text"))
        }
        return .success(text)
    }
}

struct UpstreamSecretProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension UpstreamCredentialsConfig {
    /// The keys of `upstreams.NAME.credentials`: one of the two forms, each kept as given for
    /// ConfigParser.upstreamCredentials (a grant names clients, read after the upstreams).
    static let keyTable = ConfigKeyTable<UpstreamCredentialsDraft, ConfigReader>([
        .init("header", type: "mapping (below): a static secret", default: "none") { d, n, p, _ in
            d.header = GivenNode(node: n, path: p)
        },
        .init(
            "client_credentials", type: "mapping (below): a token the gateway gets for itself", default: "none"
        ) { d, n, p, _ in
            d.clientCredentials = GivenNode(node: n, path: p)
        }
    ])

    /// The keys of `header:`, both required.
    static let headerKeyTable = ConfigKeyTable<UpstreamSecretHeaderDraft, ConfigReader>([
        .init(
            "name", type: "field name", default: "none: required",
            reader: .always { d, n, p, r in
                guard let n else { return r.problem(p, d.node, "is required") }
                guard let s = r.string(n, path: p) else { return }
                let lower = s.lowercased()
                if s.isEmpty || !s.utf8.allSatisfy(HeaderRules.isTokenChar) {
                    r.problem(p, n, "must be a field name (RFC 9110 §5.1)")
                } else if reservedFields.contains(lower) || lower.hasPrefix("x-forwarded-") {
                    r.problem(
                        p, n, "\(s) has a meaning of its own; name the upstream's field (X-Billing-Key, Authorization)")
                } else {
                    d.header.name = s
                }
            }),
        .init(
            "value_file", type: "path of a file holding the value", default: "none: required",
            reader: .always { d, n, p, r in
                guard let n else { return r.problem(p, d.node, "is required") }
                guard let s = r.string(n, path: p) else { return }
                let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
                d.header.file = full
                switch UpstreamSecretFile.read(full) {
                case .success(let value): d.header.value = value
                case .failure(let problem): r.problem(p, n, problem.description)
                }
            })
    ])

    /// The keys of a client credentials grant (`client_credentials:`; a transmitter's `auth`
    /// reads the same rows), kept as given: the client is found among the clients by
    /// ConfigParser.credentialsGrant.
    static let grantKeyTable = ConfigKeyTable<ClientCredentialsDraft, ConfigReader>([
        grantClient, grantScope, grantTokenEndpoint
    ])
    static let grantClient = ConfigKey<ClientCredentialsDraft, ConfigReader>(
        "client", type: "a `clients:` name with an `issuer`", default: "none: required"
    ) { d, n, p, r in
        d.client = GivenKey(value: r.string(n, path: p), node: n)
    }
    static let grantScope = ConfigKey<ClientCredentialsDraft, ConfigReader>(
        "scope", type: "space-separated scopes", default: "none: the AS's default"
    ) { d, n, p, r in
        d.scopeNode = n
        guard let s = r.string(n, path: p) else { return }
        if s.isEmpty || !s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5C }) {
            r.problem(p, n, "must be space-separated scope tokens (RFC 6749 §3.3)")
        } else {
            d.scope = s
        }
    }
    static let grantTokenEndpoint = ConfigKey<ClientCredentialsDraft, ConfigReader>(
        "token_endpoint", type: "http(s) URL", default: "the client's issuer's metadata (`token_endpoint`)"
    ) { d, n, p, r in
        d.tokenEndpoint = GivenKey(value: r.string(n, path: p), node: n)
    }
}

/// `upstreams.NAME.credentials` as its table reads it: the two forms as given.
struct UpstreamCredentialsDraft {
    var header: GivenNode?
    var clientCredentials: GivenNode?
}

/// `credentials.header` as its table reads it.
struct UpstreamSecretHeaderDraft {
    var header = UpstreamSecretHeader()
    /// The mapping itself: where a missing key's problem points.
    let node: Node
}

/// `{ client, scope, token_endpoint }` as its rows read it.
struct ClientCredentialsDraft {
    var client: GivenKey<String>?
    var scope: String?
    var tokenEndpoint: GivenKey<String>?
    /// Kept for a transmitter's check that `scope` goes with `client`.
    var scopeNode: Node?
}

extension ConfigParser {
    /// Each upstream's `credentials:` (the node its upstream's row kept), read once the
    /// clients and issuers are known.
    static func upstreamCredentials(
        _ given: [(name: String, node: Node)], into upstreams: inout [String: UpstreamConfig],
        clients: [String: ClientConfig],
        issuers: [String: IssuerConfig], _ r: ConfigReader
    ) {
        for (name, n) in given where upstreams[name] != nil {
            let p = "upstreams.\(name).credentials"
            guard let f = r.mapping(n, path: p, section: .upstreamCredentials) else { continue }
            var d = UpstreamCredentialsDraft()
            UpstreamCredentialsConfig.keyTable.read(f, into: &d, path: p, r)
            switch (d.header, d.clientCredentials) {
            case (.some, .some):
                r.problem(p, n, "give header or client_credentials, not both")
            case (nil, nil):
                r.problem(p, n, "needs header: { name, value_file } or client_credentials: { client, scope }")
            case (let h?, nil):
                guard let hf = r.mapping(h.node, path: h.path, section: .upstreamCredentialHeader) else { continue }
                var header = UpstreamSecretHeaderDraft(node: h.node)
                UpstreamCredentialsConfig.headerKeyTable.read(hf, into: &header, path: h.path, r)
                upstreams[name]?.credentials = .header(header.header)
            case (nil, let g?):
                guard let gf = r.mapping(g.node, path: g.path, section: .upstreamCredentialGrant) else { continue }
                var grant = ClientCredentialsDraft()
                UpstreamCredentialsConfig.grantKeyTable.read(gf, into: &grant, path: g.path, r)
                guard
                    let grant = credentialsGrant(
                        grant, node: g.node, clients: clients, issuers: issuers, path: g.path, r)
                else { continue }
                upstreams[name]?.credentials = .clientCredentials(grant)
            }
        }
    }

    /// `{ client, scope, token_endpoint }` (an upstream's `client_credentials`, a transmitter's
    /// `auth`): a `clients:` entry with an issuer, whose token endpoint is given or comes from
    /// that issuer's metadata.
    static func credentialsGrant(
        _ d: ClientCredentialsDraft, node: Node, clients: [String: ClientConfig], issuers: [String: IssuerConfig],
        path p: String, _ r: ConfigReader
    ) -> ClientCredentialsGrant? {
        guard let n = d.client?.node, let name = d.client?.value else {
            r.problem("\(p).client", node, "is required")
            return nil
        }
        guard let client = clients[name] else {
            let defined = clients.keys.sorted().joined(separator: ", ")
            r.problem(
                "\(p).client", n,
                "\"\(name)\" is not defined under clients; defined: \(defined.isEmpty ? "none" : defined)")
            return nil
        }
        guard let issuerName = client.issuer, let issuer = issuers[issuerName] else {
            r.problem("\(p).client", n, "clients.\(name) names no issuer: its token endpoint is unknown")
            return nil
        }
        var grant = ClientCredentialsGrant(
            clientName: name, issuer: issuerName, issuerURL: issuer.issuer, endpoint: nil, scope: d.scope,
            caFile: issuer.caFile)
        if let e = d.tokenEndpoint?.node, let s = d.tokenEndpoint?.value {
            if ConfigValues.url(s) == nil {
                r.problem("\(p).token_endpoint", e, "\"\(s)\" is not an http(s) URL")
            } else {
                grant.endpoint = s
            }
        } else if issuer.keys != .discovery {
            r.problem(
                "\(p).client", n,
                "issuers.\(issuerName) has no discovery: give token_endpoint, or discovery: true on the issuer")
        }
        return grant
    }
}
