import Reactor
import Yams

/// The checks between the keys of one section (an upstream, its `tls:`, …), made once the
/// section's table has read its keys.
extension ConfigValidation {
    /// What an upstream's checks look at.
    struct UpstreamInput {
        var map: [String: Node]
        /// `upstreams.NAME`.
        var path: String
        var upstream: UpstreamConfig
        var https: Bool
        var `protocol`: ConfigParser.UpstreamProtocol?
    }

    /// `protocol` and `tls` against the URL's scheme.
    static func upstream(_ x: UpstreamInput, _ r: ConfigReader) {
        let p = x.path
        switch x.protocol {
        case .h2c where x.https:
            r.problem(
                "\(p).protocol", x.map["protocol"], "h2c is HTTP/2 without TLS; with an https:// url say protocol: h2")
        case .h2 where !x.https:
            r.problem(
                "\(p).protocol", x.map["protocol"],
                "h2 is HTTP/2 over TLS and needs an https:// url; say h2c for plain HTTP/2")
        default: break
        }
        if !x.https, let t = x.map["tls"] {
            let up = x.upstream
            r.problem(
                "\(p).tls", t,
                "applies only to an https:// url; make the url https://\(up.host):\(up.port)\(up.basePath) or remove tls"
            )
        }
    }

    /// `upstreams.NAME.tls`: a client certificate needs its key, and a CA is no use without
    /// verification. False when the settings cannot make a TLS context.
    static func upstreamTLS(
        _ m: [String: Node], node: Node, path p: String, _ tls: UpstreamTLSConfig, _ r: ConfigReader
    ) -> Bool {
        var fits = true
        if (m["cert_file"] == nil) != (m["key_file"] == nil) {
            let missing = m["cert_file"] == nil ? "cert_file" : "key_file"
            r.problem(
                p, node, "a client certificate needs both cert_file and key_file; add \(missing) or remove the other")
            fits = false
        }
        if tls.insecureSkipVerify && m["ca_file"] != nil {
            r.problem(
                "\(p).insecure_skip_verify", m["insecure_skip_verify"],
                "turns certificate verification off, so ca_file would never be used; remove insecure_skip_verify (ca_file is the safe way to trust a private CA)"
            )
            fits = false
        }
        return fits
    }

    /// `session.same_site: none` needs `secure_cookie: true`.
    static func session(_ s: SessionConfig, _ m: [String: Node], _ r: ConfigReader) {
        if s.sameSite == .none && !s.secureCookie {
            r.problem(
                "session.same_site", m["same_site"],
                "same_site: none needs secure_cookie: true (browsers drop SameSite=None cookies that are not Secure)")
        }
    }

    /// `dpop.alg` says the algorithm of `dpop.key_file` (`keyFileRead`: it was given and read
    /// as a single value).
    static func dpop(_ m: [String: Node], keyFileRead: Bool, _ r: ConfigReader) {
        if !keyFileRead, let n = m["alg"] {
            r.problem("dpop.alg", n, "needs key_file (the algorithm of the gateway's DPoP key)")
        }
    }

    /// The decision endpoints against each other: apart, and not all off.
    static func decision(_ d: DecisionConfig, _ m: [String: Node], node: Node, _ r: ConfigReader) {
        if let prefix = d.extAuthzPrefix {
            for (key, p) in [("path", d.path), ("forward_auth_path", d.forwardAuthPath)] {
                if let p, p == prefix || p.hasPrefix(prefix + "/") {
                    r.problem(
                        "decision.\(key)", m[key] ?? node,
                        "lies under decision.ext_authz_prefix \(prefix); pick another path or prefix")
                }
            }
        }
        if let a = d.path, a == d.forwardAuthPath {
            r.problem(
                "decision.forward_auth_path", m["forward_auth_path"] ?? node,
                "is decision.path too: each ingress style needs its own endpoint (nginx: path; Traefik, Caddy: forward_auth_path)"
            )
        }
        if d.path == nil && d.forwardAuthPath == nil && d.extAuthzPrefix == nil && !d.extAuthzGRPC {
            r.problem(
                "decision", node,
                "every endpoint is off: set path, forward_auth_path, ext_authz_prefix or ext_authz_grpc")
        }
    }

    /// An issuer's keys come from exactly one place.
    static func issuerKeySource(
        discovery: Bool, jwksURI: Bool, jwksFile: Bool, path p: String, node: Node, _ r: ConfigReader
    ) {
        if [discovery, jwksURI, jwksFile].filter({ $0 }).count != 1 {
            r.problem(p, node, "give exactly one of discovery: true, jwks_uri or jwks_file")
        }
    }

    /// Introspection needs an endpoint: its own, or the issuer's metadata's. False when it has
    /// none.
    static func introspectionEndpoint(
        _ endpoint: Bool, discovery: Bool, path p: String, node: Node, _ r: ConfigReader
    ) -> Bool {
        if endpoint || discovery { return true }
        r.problem(p, node, "needs endpoint: URL (or discovery: true on the issuer)")
        return false
    }

    /// A client's request_mode that signs a request object needs its key_file (RFC 9101).
    static func client(_ c: ClientConfig, _ m: [String: Node], path p: String, hasKey: Bool, _ r: ConfigReader) {
        if c.login.requestMode != .plain && !hasKey && m["request_mode"] != nil {
            r.problem(
                "\(p).request_mode", m["request_mode"],
                "request_mode \(c.login.requestMode.rawValue) signs a request object: add key_file (tokengate keys generate)"
            )
        }
    }

    /// A listener's `tls:`: one certificate or a list, the cipher lists only with the custom
    /// profile, the client certificate settings only with their CAs (`clients` nil: no
    /// client_ca_file was read).
    static func listenerTLS(
        _ m: [String: Node], node: Node, path p: String, profile: TLSProfile?, clients: ClientCertificates?,
        _ r: ConfigReader
    ) {
        if m["certificates"] != nil && (m["cert_file"] != nil || m["key_file"] != nil) {
            r.problem(p, node, "takes cert_file and key_file, or certificates, not both")
        }
        if profile == .intermediate || profile == .modern {
            for key in ["ciphers", "ciphersuites", "curves"] where m[key] != nil {
                r.problem("\(p).\(key)", m[key], "is taken only with profile: custom")
            }
        }
        if clients == nil {
            for key in ["client_certificate", "client_crl_file"] where m[key] != nil {
                r.problem("\(p).\(key)", m[key], "needs client_ca_file (the CAs client certificates must chain to)")
            }
        }
    }
}
