import Foundation
import JOSE
import OAuth
import Yams

/// `clients:` — the gateway's own OAuth client registrations (`ClientConfig.keyTable`) —
/// and an issuer's `introspection:` block.
extension ConfigParser {
    /// A private key file (JWK or PEM) and the algorithm it signs with.
    static func clientKey(file: String, node: Node, algNode: Node?, path p: String, _ r: ConfigReader) -> (
        JWK?, JWSAlgorithm?
    ) {
        let full = file.hasPrefix("/") ? file : "\(r.baseDirectory)/\(file)"
        guard let text = try? String(contentsOfFile: full, encoding: .utf8) else {
            r.problem("\(p).key_file", node, "cannot read \(full)")
            return (nil, nil)
        }
        do {
            let key = text.contains("-----BEGIN") ? try JWK(pem: text) : try JWK(json: text)
            guard key.isPrivate, key.kty != "oct" else {
                r.problem("\(p).key_file", node, "must hold a private RSA, EC or Ed25519 key")
                return (nil, nil)
            }
            let algName =
                algNode.flatMap { r.string($0, path: "\(p).alg") } ?? key.alg
                ?? (key.kty == "RSA" ? "RS256" : key.kty == "EC" ? "ES256" : "EdDSA")
            guard let alg = JWSAlgorithm(rawValue: algName), (try? key.checkUsable(for: alg, operation: "sign")) != nil
            else {
                r.problem("\(p).alg", algNode ?? node, "\(algName) does not fit the key in \(file)")
                return (nil, nil)
            }
            return (key, alg)
        } catch {
            r.problem("\(p).key_file", node, "not a usable key: \(error)")
            return (nil, nil)
        }
    }

    /// `auth: client_assertion_file`: the file must hold a JWT with `exp` when the config is
    /// read (it is read again at each use, `ClientAssertionFile`); one that has expired since is
    /// the rotation's business, not the config's.
    static func assertionFile(_ file: String, clientID: String, node: Node?, path p: String, _ r: ConfigReader)
        -> ClientAuthentication?
    {
        let full = file.hasPrefix("/") ? file : "\(r.baseDirectory)/\(file)"
        do {
            _ = try ClientAssertionFile.read(full)
        } catch {
            r.problem("\(p).assertion_file", node, "\(error.code.rawValue): \(error.reason) (\(full))")
            return nil
        }
        return .clientAssertion(clientID: clientID, source: ClientAssertionFile(path: full))
    }

    static func clients(_ node: Node?, issuers: [String: IssuerConfig], _ r: ConfigReader) -> [String: ClientConfig] {
        guard let node, let m = r.mapping(node, path: "clients", section: nil) else { return [:] }
        var out: [String: ClientConfig] = [:]
        for (name, value) in m {
            let p = "clients.\(name)"
            guard let c = r.mapping(value, path: p, section: .client) else { continue }
            let issuer = c["issuer"].flatMap { r.string($0, path: "\(p).issuer") }
            if let issuer, issuers[issuer] == nil {
                r.problem(
                    "\(p).issuer", c["issuer"],
                    "\"\(issuer)\" is not defined; defined: \(issuers.keys.sorted().joined(separator: ", "))")
            }
            guard let idNode = c["client_id"], let id = r.string(idNode, path: "\(p).client_id"), !id.isEmpty else {
                r.problem(p, value, "needs client_id")
                continue
            }
            let method = c["auth"].flatMap { r.string($0, path: "\(p).auth") } ?? "client_secret_basic"
            var auth: ClientAuthentication?
            // key_file: the client's private key, for private_key_jwt and for request objects.
            var key: JWK?
            var keyAlgorithm: JWSAlgorithm?
            if let fileNode = c["key_file"], let file = r.string(fileNode, path: "\(p).key_file") {
                (key, keyAlgorithm) = clientKey(file: file, node: fileNode, algNode: c["alg"], path: p, r)
            }
            guard ConfigValidation.clientAuthentication(method, c, path: p, node: value, r) else { continue }
            switch method {
            case "client_secret_basic", "client_secret_post", "client_secret_jwt":
                guard let secret = r.secret(c, key: "secret", path: p) else { continue }
                if method == "client_secret_jwt" && secret.utf8.count < 32 {
                    r.problem(
                        "\(p).secret", c["secret"] ?? c["secret_file"],
                        "client_secret_jwt (HS256) needs a secret of at least 32 bytes")
                    continue
                }
                auth =
                    method == "client_secret_basic"
                    ? .clientSecretBasic(clientID: id, secret: secret)
                    : method == "client_secret_post"
                        ? .clientSecretPost(clientID: id, secret: secret)
                        : .clientSecretJWT(clientID: id, secret: secret)
            case "private_key_jwt":
                guard let key, let alg = keyAlgorithm else { continue }
                auth = .privateKeyJWT(clientID: id, key: key, alg: alg)
            case "client_assertion_file":
                guard let file = c["assertion_file"].flatMap({ r.string($0, path: "\(p).assertion_file") })
                else { continue }
                auth = assertionFile(file, clientID: id, node: c["assertion_file"], path: p, r)
            case "tls_client_auth", "self_signed_tls_client_auth":
                auth =
                    method == "tls_client_auth"
                    ? .tlsClientAuth(clientID: id) : .selfSignedTLSClientAuth(clientID: id)
            default:
                r.problem(
                    "\(p).auth", c["auth"],
                    "must be client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt, client_assertion_file, tls_client_auth or self_signed_tls_client_auth"
                )
                continue
            }
            guard let auth else { continue }
            var client = ClientConfig(name: name, issuer: issuer, authentication: auth)
            if let n = c["tls"] {
                guard
                    let tls = clientTLS(
                        n, path: "\(p).tls", selfSigned: method == "self_signed_tls_client_auth", r)
                else { continue }
                client.tls = tls
            }
            client.key = key
            client.requestObjectAlgorithm = keyAlgorithm
            ClientConfig.keyTable.read(c, into: &client, path: p, r)
            ConfigValidation.client(client, c, path: p, hasKey: key != nil, r)
            client.profile = securityProfile(c, path: p, r)
            if client.profile == .fapi2 { fapi2Client(client, c, path: p, issuer: issuer.flatMap { issuers[$0] }, r) }
            out[name] = client
        }
        return out
    }

    /// An issuer's `introspection: { client: NAME, endpoint: URL, cache_ttl: 60s, negative_ttl: 10s }`.
    static func introspection(
        _ node: Node, path p: String, clients: [String: ClientConfig], discovery: Bool,
        _ r: ConfigReader
    ) -> IntrospectionConfig? {
        guard let m = r.mapping(node, path: p, section: .introspection) else { return nil }
        guard let cn = m["client"], let name = r.string(cn, path: "\(p).client") else {
            r.problem(p, node, "needs client: NAME (the gateway's client registration used to authenticate)")
            return nil
        }
        guard let client = clients[name] else {
            r.problem(
                "\(p).client", cn,
                "\"\(name)\" is not defined; defined: \(clients.keys.sorted().joined(separator: ", "))")
            return nil
        }
        let endpoint = m["endpoint"].flatMap { r.string($0, path: "\(p).endpoint") }
        guard ConfigValidation.introspectionEndpoint(endpoint != nil, discovery: discovery, path: p, node: node, r)
        else { return nil }
        if let endpoint, ConfigValues.url(endpoint) == nil {
            r.problem("\(p).endpoint", m["endpoint"], "\"\(endpoint)\" is not an http(s) URL")
        }
        var cfg = IntrospectionConfig(client: client, endpoint: endpoint)
        IntrospectionConfig.keyTable.read(m, into: &cfg, path: p, r)
        return cfg
    }
}
