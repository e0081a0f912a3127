import JOSE
import OAuth
import Yams

/// `profile: fapi2` on a client (the login) and on an issuer (the resource side): what the
/// FAPI 2.0 Security Profile (FAPI2SP) and Message Signing (FAPI2MS) forbid is refused by
/// check-config, each refusal naming its clause; what they require at run time is switched on
/// (the authorization response's `iss`, sender-constrained tokens only). Clause numbers are
/// the documents' own: the Security Profile's final text, Message Signing's draft -02.
extension ConfigParser {
    /// FAPI2SP §5.4.1: PS256, ES256 and EdDSA (Ed25519) only.
    static let fapi2Algorithms: Set<JWSAlgorithm> = [.PS256, .ES256, .EdDSA]

    /// A `profile:` key's value (`p`: the key's own path).
    static func securityProfile(_ n: Node, path p: String, _ r: ConfigReader) -> SecurityProfile? {
        guard let s = r.string(n, path: p) else { return nil }
        guard let profile = SecurityProfile(rawValue: s) else {
            r.problem(p, n, "must be fapi2 (or leave it out)")
            return nil
        }
        return profile
    }

    /// An issuer held to FAPI 2.0: its algorithms narrowed to the profile's by default, and
    /// refused when listed outside it.
    static func fapi2Issuer(_ cfg: inout IssuerConfig, algorithms: Node?, path p: String, _ r: ConfigReader) {
        if algorithms == nil {
            cfg.algorithms = fapi2Algorithms
        } else if !cfg.algorithms.isSubset(of: fapi2Algorithms) {
            let off = cfg.algorithms.subtracting(fapi2Algorithms).map(\.rawValue).sorted().joined(separator: ", ")
            r.problem(
                "\(p).algorithms", algorithms,
                "\(off) is not allowed with profile: fapi2 (FAPI 2.0 Security Profile §5.4.1: PS256, ES256 or EdDSA)")
        }
    }

    /// Introspection for an issuer held to FAPI 2.0: signed answers only (RFC 9701; FAPI 2.0
    /// Message Signing §5.5.2), on by default and refused off.
    static func fapi2Introspection(
        _ cfg: inout IntrospectionConfig, _ node: Node, path p: String, _ r: ConfigReader
    ) {
        if cfg.signed == false, let n = node["signed"] {
            r.problem(
                "\(p).signed", n,
                "must be true with profile: fapi2 (FAPI 2.0 Message Signing §5.5.2: signed introspection responses, RFC 9701)"
            )
        }
        cfg.signed = true
    }

    /// A client held to FAPI 2.0: PAR, private_key_jwt (a key of the profile's algorithms, the
    /// issuer as the assertion's audience) or mutual TLS, tokens bound by DPoP or the client's
    /// certificate, an issuer whose ID token algorithms are the profile's.
    static func fapi2Client(
        _ client: ClientConfig, _ d: ClientDraft, path p: String, issuer: IssuerConfig?, _ r: ConfigReader
    ) {
        if client.login.requestMode != .par {
            r.problem(
                "\(p).request_mode", d.requestMode,
                "must be par with profile: fapi2 (FAPI 2.0 Security Profile §5.3.3.2 item 2: authorization requests are pushed, RFC 9126)"
            )
        }
        switch client.authentication {
        case .privateKeyJWT:
            if client.assertionAudience != .issuer {
                r.problem(
                    "\(p).assertion_audience", d.assertionAudience,
                    "must be issuer with profile: fapi2 (FAPI 2.0 Security Profile §5.3.3.1 item 5: the client assertion's aud is the issuer identifier, as a string)"
                )
            }
        case .tlsClientAuth, .selfSignedTLSClientAuth: break
        default:
            r.problem(
                "\(p).auth", d.auth?.node,
                "must be private_key_jwt, tls_client_auth or self_signed_tls_client_auth with profile: fapi2 (FAPI 2.0 Security Profile §5.3.3.1 item 2: private_key_jwt or mutual TLS; a shared secret is not allowed)"
            )
            return
        }
        // The key signs request objects, and with private_key_jwt the assertions.
        if client.key != nil, let alg = client.requestObjectAlgorithm, !fapi2Algorithms.contains(alg) {
            r.problem(
                "\(p).alg", d.alg ?? d.keyFile?.node,
                "\(alg.rawValue) is not allowed with profile: fapi2 (FAPI 2.0 Security Profile §5.4.1: PS256, ES256 or EdDSA)"
            )
        }
        // Sender-constrained: DPoP, or the certificate the client presents (RFC 8705 §3).
        if !client.login.dpop && client.tls == nil {
            r.problem(
                "\(p).dpop", d.dpop ?? d.clientID?.node,
                "must be true with profile: fapi2, or give the client tls: { cert_file, key_file } (FAPI 2.0 Security Profile §5.3.3.1 item 1: access tokens are sender-constrained, by DPoP or mutual TLS)"
            )
        }
        if let issuer, !issuer.algorithms.isSubset(of: fapi2Algorithms) {
            let off = issuer.algorithms.subtracting(fapi2Algorithms).map(\.rawValue).sorted().joined(separator: ", ")
            r.problem(
                "\(p).issuer", d.issuer?.node,
                "issuers.\(issuer.name) allows \(off): with profile: fapi2 ID tokens are PS256, ES256 or EdDSA only (FAPI 2.0 Security Profile §5.4.1); give the issuer profile: fapi2 or algorithms: [PS256, ES256, EdDSA]"
            )
        }
    }

    /// Token routes with a FAPI 2.0 issuer: no tokens in the query or a form body (FAPI2SP
    /// §5.3.4 items 1–2: RFC 6750 §2.1 only), and that issuer's tokens sender-constrained (item 5).
    static func fapi2Routes(
        _ routes: inout [RouteConfig], issuers: [String: IssuerConfig], routesNode: Node?, _ r: ConfigReader
    ) {
        let nodes = routesNode.flatMap { $0.sequence.map(Array.init) } ?? []
        for i in routes.indices {
            guard var tokens = routes[i].options.auth.tokenRoute else { continue }
            let held = Set(tokens.issuers.filter { issuers[$0]?.profile == .fapi2 })
            guard !held.isEmpty else { continue }
            let index = routes[i].index
            let node = index < nodes.count ? nodes[index] : nil
            let p = "routes[\(index)]"
            for (key, on) in [("token_in_query", tokens.tokenInQuery), ("token_in_body", tokens.tokenInBody)] where on {
                r.problem(
                    "\(p).\(key)", node?[key] ?? node,
                    "is not allowed with issuers of profile: fapi2 (\(held.sorted().joined(separator: ", "))): FAPI 2.0 Security Profile §5.3.4 items 1–2 take access tokens in the Authorization header only"
                )
            }
            if !tokens.apiKeySets.isEmpty {
                r.problem(
                    "\(p).api_keys", node?["api_keys"] ?? node,
                    "is not allowed with issuers of profile: fapi2 (\(held.sorted().joined(separator: ", "))): FAPI 2.0 Security Profile §5.3.4 item 5 takes sender-constrained tokens only, and a key is a bearer credential"
                )
            }
            tokens.boundOnlyIssuers = held
            routes[i].options.auth.tokenRoute = tokens
        }
    }
}
