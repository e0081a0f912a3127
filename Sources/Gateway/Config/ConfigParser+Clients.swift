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
            var d = ClientDraft(name: name)
            ClientConfig.keyTable.read(c, into: &d, path: p, r)
            if let client = client(d, path: p, node: value, issuers: issuers, r) { out[name] = client }
        }
        return out
    }

    /// The client from its draft: the registration (issuer, client_id, the authentication
    /// method and what it needs) put into the client its table read; nil when the
    /// registration is refused (the problems are reported).
    private static func client(
        _ d: ClientDraft, path p: String, node: Node, issuers: [String: IssuerConfig], _ r: ConfigReader
    ) -> ClientConfig? {
        let issuer = d.issuer?.value
        if let issuer, issuers[issuer] == nil {
            r.problem(
                "\(p).issuer", d.issuer?.node,
                "\"\(issuer)\" is not defined; defined: \(issuers.keys.sorted().joined(separator: ", "))")
        }
        guard let id = d.clientID?.value, !id.isEmpty else {
            r.problem(p, node, "needs client_id")
            return nil
        }
        let method = d.auth?.value ?? "client_secret_basic"
        var auth: ClientAuthentication?
        // key_file: the client's private key, for private_key_jwt and for request objects.
        var key: JWK?
        var keyAlgorithm: JWSAlgorithm?
        if let given = d.keyFile, let file = given.value {
            (key, keyAlgorithm) = clientKey(file: file, node: given.node, algNode: d.alg, path: p, r)
        }
        guard ConfigValidation.clientAuthentication(method, d, path: p, node: node, r) else { return nil }
        switch method {
        case "client_secret_basic", "client_secret_post", "client_secret_jwt":
            guard let secret = r.secret(inline: d.secret?.node, file: d.secretFile?.node, key: "secret", path: p)
            else { return nil }
            if method == "client_secret_jwt" && secret.utf8.count < 32 {
                r.problem(
                    "\(p).secret", (d.secret ?? d.secretFile)?.node,
                    "client_secret_jwt (HS256) needs a secret of at least 32 bytes")
                return nil
            }
            auth =
                method == "client_secret_basic"
                ? .clientSecretBasic(clientID: id, secret: secret)
                : method == "client_secret_post"
                    ? .clientSecretPost(clientID: id, secret: secret)
                    : .clientSecretJWT(clientID: id, secret: secret)
        case "private_key_jwt":
            guard let key, let alg = keyAlgorithm else { return nil }
            auth = .privateKeyJWT(clientID: id, key: key, alg: alg)
        case "client_assertion_file":
            guard let file = d.assertionFile?.value else { return nil }
            auth = assertionFile(file, clientID: id, node: d.assertionFile?.node, path: p, r)
        case "tls_client_auth", "self_signed_tls_client_auth":
            auth =
                method == "tls_client_auth"
                ? .tlsClientAuth(clientID: id) : .selfSignedTLSClientAuth(clientID: id)
        default:
            r.problem(
                "\(p).auth", d.auth?.node,
                "must be client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt, client_assertion_file, tls_client_auth or self_signed_tls_client_auth"
            )
            return nil
        }
        guard let auth else { return nil }
        var client = d.client
        client.issuer = issuer
        client.authentication = auth
        if let given = d.tls {
            guard
                let tls = clientTLS(
                    given.node, path: given.path, selfSigned: method == "self_signed_tls_client_auth", r)
            else { return nil }
            client.tls = tls
        }
        client.key = key
        client.requestObjectAlgorithm = keyAlgorithm
        ConfigValidation.client(client, requestMode: d.requestMode, path: p, hasKey: key != nil, r)
        if client.profile == .fapi2 { fapi2Client(client, d, path: p, issuer: issuer.flatMap { issuers[$0] }, r) }
        return client
    }

    /// An issuer's `introspection: { client: NAME, endpoint: URL, cache_ttl: 60s, negative_ttl: 10s }`.
    static func introspection(
        _ node: Node, path p: String, clients: [String: ClientConfig], discovery: Bool,
        _ r: ConfigReader
    ) -> IntrospectionConfig? {
        guard let m = r.mapping(node, path: p, section: .introspection) else { return nil }
        var d = IntrospectionDraft()
        IntrospectionConfig.keyTable.read(m, into: &d, path: p, r)
        guard let given = d.client, let name = given.value else {
            r.problem(p, node, "needs client: NAME (the gateway's client registration used to authenticate)")
            return nil
        }
        guard let client = clients[name] else {
            r.problem(
                "\(p).client", given.node,
                "\"\(name)\" is not defined; defined: \(clients.keys.sorted().joined(separator: ", "))")
            return nil
        }
        guard
            ConfigValidation.introspectionEndpoint(
                d.cfg.endpoint != nil, discovery: discovery, path: p, node: node, r)
        else { return nil }
        d.cfg.client = client
        return d.cfg
    }
}
