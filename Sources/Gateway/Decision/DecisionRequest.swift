import JOSE
import Reactor

/// The original request an ingress asks about. The endpoint the ingress calls names its
/// convention, and only that convention's headers are read — never another's, which a client
/// may have sent (Caddy and Traefik pass the client's headers to the judge; nginx passes them
/// unless its config overrides each one):
///   - nginx `auth_request` / ingress-nginx (`decision.path`): `X-Original-URL`, absolute, and
///     `X-Original-Method`, both required — the recipe sets both, so a client's copies never
///     arrive, and nothing falls back to a header the ingress might not set;
///   - Traefik `forwardAuth`, Caddy `forward_auth` (`decision.forward_auth_path`):
///     `X-Forwarded-Method`, `-Proto`, `-Host`, `-Uri`, all required (both set all four);
///   - Envoy `ext_authz` (HTTP service): the request line itself, `<prefix><original path>`,
///     with the original Host.
/// These name the request the ingress routes, so they are believed only from a peer in
/// `trusted_proxies` (and with `decision.secret`, only with the secret); anyone else gets 400.
struct DecisionRequest {
    /// Which ingress convention described the request (which endpoint was called): it decides
    /// which headers are read and how a login is asked for.
    enum Style: String {
        /// nginx turns any status but 2xx, 401 and 403 into 500, so a login is a 401 the config
        /// redirects with `error_page 401 =`.
        case nginx
        /// Traefik, Caddy and Envoy hand the verdict to the client as it is, so a login is a 302.
        case forwardAuth
        case envoy
    }

    var method: String
    var scheme: String
    /// The original Host (an authority: host[:port]).
    var host: String
    /// The original request-target: path and query, not decoded.
    var target: String
    var style: Style

    /// The absolute original URL (for `rd` and logs).
    var url: String { "\(scheme)://\(host)\(target)" }

    /// Why a decision request cannot be judged: answered 400, and logged.
    struct Problem: Error {
        var description: String
        var detail: String
    }

    /// The headers that describe the original request, read in one pass over the fields
    /// (a decision is on every request's path): each one's first value and its count.
    struct Described {
        enum Name: Int, CaseIterable {
            case originalURL, originalMethod, forwardedURI, forwardedMethod, forwardedHost, forwardedProto, host, secret
            var text: String {
                [
                    "X-Original-URL", "X-Original-Method", "X-Forwarded-Uri", "X-Forwarded-Method", "X-Forwarded-Host",
                    "X-Forwarded-Proto", "Host", DecisionConfig.secretHeader
                ][rawValue]
            }
        }
        static let lowered: [[UInt8]] = Name.allCases.map { Array($0.text.lowercased().utf8) }
        var values = [String?](repeating: nil, count: Name.allCases.count)
        var counts = [Int](repeating: 0, count: Name.allCases.count)

        init(_ fields: HTTP1Fields) {
            fields.forEachField { name, value in
                for i in 0..<Self.lowered.count where HeaderRules.equals(name, Self.lowered[i]) {
                    counts[i] += 1
                    if values[i] == nil { values[i] = String(decodingUTF8: value) }
                    break
                }
            }
        }

        subscript(_ name: Name) -> String? { values[name.rawValue] }
        func count(_ name: Name) -> Int { counts[name.rawValue] }
    }

    /// The headers each style reads: only these must appear at most once (a header another
    /// style reads is not looked at, so a client's copy of it cannot matter).
    static func reads(_ style: Style) -> [Described.Name] {
        switch style {
        case .nginx: return [.originalURL, .originalMethod, .host, .secret]
        case .forwardAuth: return [.forwardedURI, .forwardedMethod, .forwardedHost, .forwardedProto, .host, .secret]
        case .envoy: return [.forwardedProto, .host, .secret]
        }
    }

    /// Reads the original request in `style`'s headers only.
    ///   - extAuthzTarget: for Envoy's form, the request-target with the prefix removed.
    ///   - secret: `decision.secret`; the request must carry it in `DecisionConfig.secretHeader`.
    static func read(
        _ head: HTTPRequestHead, style: Style, extAuthzTarget: String? = nil, connectionScheme: String, peer: String,
        peerTrusted: Bool, secret: [UInt8]? = nil
    ) -> Result<DecisionRequest, Problem> {
        let f = Described(head.fields)
        guard peerTrusted else {
            // The headers would let any client pick the request being judged: none is read.
            let sent = [Described.Name.originalURL, .forwardedURI, .originalMethod, .forwardedMethod, .forwardedHost]
                .filter { f.count($0) > 0 }.map(\.text)
            return .failure(
                Problem(
                    description: "the decision endpoint answers only the ingress (trusted_proxies)",
                    detail:
                        "decision request from untrusted peer \(peer); ignored: \(sent.isEmpty ? "no forwarded headers" : sent.joined(separator: ", "))"
                ))
        }
        // Each header the style reads at most once: two values would let the ingress and
        // tokengate each read a different one.
        for name in reads(style) where f.count(name) > 1 {
            return .failure(Problem(description: "more than one \(name.text) header", detail: "duplicate \(name.text)"))
        }
        if let secret {
            // Constant time: the position of the first wrong byte is never timed.
            guard let sent = f[.secret], ConstantTime.equals(Array(sent.utf8), secret) else {
                return .failure(
                    Problem(
                        description: "the decision endpoint answers only the ingress (decision.secret)",
                        detail:
                            "decision request from \(peer) \(f[.secret] == nil ? "without" : "with a wrong") \(DecisionConfig.secretHeader)"
                    ))
            }
        }
        func required(_ name: Described.Name) -> Result<String, Problem> {
            guard let v = f[name], !v.isEmpty else {
                return .failure(
                    Problem(
                        description: "the ingress did not send \(name.text) (see the \(style.rawValue) recipe)",
                        detail: "missing \(name.text) (\(style.rawValue) endpoint)"))
            }
            return .success(v)
        }
        switch style {
        case .envoy:
            guard let target = extAuthzTarget else {
                return .failure(Problem(description: "no ext_authz target", detail: "no ext_authz target"))
            }
            let proto = f[.forwardedProto]?.lowercased()
            let scheme = proto == "https" || proto == "http" ? proto! : connectionScheme
            guard let host = f[.host], !host.isEmpty else {
                return .failure(
                    Problem(description: "the ext_authz request has no Host", detail: "ext_authz without Host"))
            }
            return check(
                DecisionRequest(method: head.methodName, scheme: scheme, host: host, target: target, style: .envoy))
        case .nginx:
            // No fallback to X-Forwarded-* or to the subrequest's own method: nginx passes the
            // client's headers, and only the two the recipe overwrites are the ingress's word.
            let original: String
            let method: String
            switch required(.originalURL) {
            case .success(let v): original = v
            case .failure(let p): return .failure(p)
            }
            switch required(.originalMethod) {
            case .success(let v): method = v
            case .failure(let p): return .failure(p)
            }
            guard let (s, host, target) = splitAbsolute(original) else {
                return .failure(
                    Problem(
                        description:
                            "X-Original-URL must be an absolute http(s) URL ($scheme://$http_host$request_uri)",
                        detail: "bad X-Original-URL \(original.prefix(200))"))
            }
            return check(DecisionRequest(method: method, scheme: s, host: host, target: target, style: .nginx))
        case .forwardAuth:
            var v: [String] = []
            for name in [Described.Name.forwardedMethod, .forwardedProto, .forwardedHost, .forwardedURI] {
                switch required(name) {
                case .success(let x): v.append(x)
                case .failure(let p): return .failure(p)
                }
            }
            let proto = v[1].lowercased()
            guard proto == "https" || proto == "http" else {
                return .failure(
                    Problem(
                        description: "X-Forwarded-Proto must be http or https",
                        detail: "bad X-Forwarded-Proto \(v[1].prefix(20))"))
            }
            return check(DecisionRequest(method: v[0], scheme: proto, host: v[2], target: v[3], style: .forwardAuth))
        }
    }

    /// The parts must be what they claim: a method token, a host the router accepts, an
    /// origin-form target. (Path confusion is the path normalizer's: the same as a proxied
    /// request's.)
    static func check(_ r: DecisionRequest) -> Result<DecisionRequest, Problem> {
        guard !r.method.isEmpty, r.method.utf8.count <= 32, r.method.utf8.allSatisfy(HeaderRules.isTokenChar) else {
            return .failure(Problem(description: "the original method is not a method", detail: "bad original method"))
        }
        guard HostNormalizer.normalize(r.host) != nil else {
            return .failure(
                Problem(
                    description: "the original host is not a valid host",
                    detail: "bad original host \(r.host.prefix(100))"))
        }
        guard r.target.hasPrefix("/") else {
            return .failure(
                Problem(
                    description: "the original URI must be a path starting with /",
                    detail: "bad original URI \(r.target.prefix(200))"))
        }
        return .success(r)
    }

    /// `scheme://authority/path?query` → its parts; the path defaults to `/`.
    static func splitAbsolute(_ url: String) -> (scheme: String, host: String, target: String)? {
        let lower = url.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") {
            scheme = "https"
        } else if lower.hasPrefix("http://") {
            scheme = "http"
        } else {
            return nil
        }
        let rest = url.dropFirst(scheme.count + 3)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = String(rest[..<end])
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var target = String(rest[end...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        return (scheme, authority, target)
    }

    /// The request to judge, as the router and the authentication stage read one: the
    /// original method and target, the decision request's fields (credentials, cookies,
    /// Accept) with the original Host.
    func head(from decision: HTTPRequestHead) -> HTTPRequestHead {
        var fields = decision.fields
        fields.removeAll("Host")
        // The ingress's secret is for this endpoint only, never a part of the judged request.
        fields.removeAll(DecisionConfig.secretHeader)
        fields.append("Host", host)
        return HTTPRequestHead(methodName: method, target: target, version: (1, 1), fields: fields)
    }
}
