import Reactor

/// The original request an ingress asks about, read from the decision request:
///   - nginx `auth_request` / ingress-nginx: `X-Original-URL` (absolute, or a path with
///     `X-Forwarded-Host`) and `X-Original-Method`;
///   - Traefik `forwardAuth`, Caddy `forward_auth`: `X-Forwarded-Method`, `-Proto`, `-Host`, `-Uri`;
///   - Envoy `ext_authz` (HTTP service): the request line itself, `<prefix><original path>`,
///     with the original Host.
/// These name the request the ingress routes, so they are believed only from a peer in
/// `trusted_proxies`; a client that calls the endpoint itself gets 400.
struct DecisionRequest {
    /// Which ingress convention described the request: it decides how a login is asked for.
    enum Style: String {
        /// `X-Original-URL`: nginx turns any status but 2xx, 401 and 403 into 500, so a login
        /// is a 401 the config redirects with `error_page 401 =`.
        case nginx
        /// `X-Forwarded-Uri` (Traefik, Caddy) and Envoy: the verdict goes to the client as it
        /// is, so a login is a 302.
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
            case originalURL, originalMethod, forwardedURI, forwardedMethod, forwardedHost, forwardedProto, host
            var text: String {
                ["X-Original-URL", "X-Original-Method", "X-Forwarded-Uri", "X-Forwarded-Method", "X-Forwarded-Host",
                 "X-Forwarded-Proto", "Host"][rawValue]
            }
        }
        static let lowered: [[UInt8]] = Name.allCases.map { Array($0.text.lowercased().utf8) }
        var values = [String?](repeating: nil, count: Name.allCases.count)
        var counts = [Int](repeating: 0, count: Name.allCases.count)

        init(_ fields: HTTP1Fields) {
            fields.forEachField { name, value in
                for i in 0..<Self.lowered.count where HeaderRules.equals(name, Self.lowered[i]) {
                    counts[i] += 1
                    if values[i] == nil { values[i] = String(decoding: value, as: UTF8.self) }
                    break
                }
            }
        }

        subscript(_ name: Name) -> String? { values[name.rawValue] }
        func count(_ name: Name) -> Int { counts[name.rawValue] }
    }

    /// `extAuthzTarget`: for Envoy's form, the request-target with the prefix removed.
    static func read(_ head: HTTPRequestHead, extAuthzTarget: String?, connectionScheme: String, peer: String, peerTrusted: Bool)
        -> Result<DecisionRequest, Problem> {
        let f = Described(head.fields)
        guard peerTrusted else {
            // The headers would let any client pick the request being judged: none is read.
            let sent = [Described.Name.originalURL, .forwardedURI, .originalMethod, .forwardedMethod, .forwardedHost]
                .filter { f.count($0) > 0 }.map(\.text)
            return .failure(Problem(description: "the decision endpoint answers only the ingress (trusted_proxies)",
                                    detail: "decision request from untrusted peer \(peer); ignored: \(sent.isEmpty ? "no forwarded headers" : sent.joined(separator: ", "))"))
        }
        // Each describing header at most once: two values would let the ingress and tokengate
        // each read a different one.
        for name in Described.Name.allCases where f.count(name) > 1 {
            return .failure(Problem(description: "more than one \(name.text) header", detail: "duplicate \(name.text)"))
        }
        let proto = f[.forwardedProto]?.lowercased()
        let scheme = proto == "https" || proto == "http" ? proto! : connectionScheme
        if let target = extAuthzTarget {
            guard let host = f[.host], !host.isEmpty else {
                return .failure(Problem(description: "the ext_authz request has no Host", detail: "ext_authz without Host"))
            }
            return check(DecisionRequest(method: head.methodName, scheme: scheme, host: host, target: target, style: .envoy))
        }
        if let original = f[.originalURL] {
            let method = f[.originalMethod] ?? f[.forwardedMethod] ?? head.methodName
            if original.hasPrefix("/") {
                guard let host = f[.forwardedHost] else {
                    return .failure(Problem(description: "X-Original-URL is a path: send X-Forwarded-Host too",
                                            detail: "X-Original-URL path without X-Forwarded-Host"))
                }
                return check(DecisionRequest(method: method, scheme: scheme, host: host, target: original, style: .nginx))
            }
            guard let (s, host, target) = splitAbsolute(original) else {
                return .failure(Problem(description: "X-Original-URL is not an absolute http(s) URL or a path",
                                        detail: "bad X-Original-URL \(original.prefix(200))"))
            }
            return check(DecisionRequest(method: method, scheme: s, host: host, target: target, style: .nginx))
        }
        if let uri = f[.forwardedURI] {
            guard let host = f[.forwardedHost] else {
                return .failure(Problem(description: "X-Forwarded-Uri needs X-Forwarded-Host", detail: "X-Forwarded-Uri without X-Forwarded-Host"))
            }
            let method = f[.forwardedMethod] ?? head.methodName
            return check(DecisionRequest(method: method, scheme: scheme, host: host, target: uri, style: .forwardAuth))
        }
        return .failure(Problem(description: "the ingress did not say which request to judge (X-Original-URL or X-Forwarded-Uri)",
                                detail: "no X-Original-URL or X-Forwarded-Uri"))
    }

    /// The parts must be what they claim: a method token, a host the router accepts, an
    /// origin-form target. (Path confusion is the path normalizer's: the same as a proxied
    /// request's.)
    private static func check(_ r: DecisionRequest) -> Result<DecisionRequest, Problem> {
        guard !r.method.isEmpty, r.method.utf8.count <= 32, r.method.utf8.allSatisfy(HeaderRules.isTokenChar) else {
            return .failure(Problem(description: "the original method is not a method", detail: "bad original method"))
        }
        guard HostNormalizer.normalize(r.host) != nil else {
            return .failure(Problem(description: "the original host is not a valid host", detail: "bad original host \(r.host.prefix(100))"))
        }
        guard r.target.hasPrefix("/") else {
            return .failure(Problem(description: "the original URI must be a path starting with /", detail: "bad original URI \(r.target.prefix(200))"))
        }
        return .success(r)
    }

    /// `scheme://authority/path?query` → its parts; the path defaults to `/`.
    static func splitAbsolute(_ url: String) -> (scheme: String, host: String, target: String)? {
        let lower = url.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") { scheme = "https" } else if lower.hasPrefix("http://") { scheme = "http" } else { return nil }
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
        fields.append("Host", host)
        return HTTPRequestHead(methodName: method, target: target, version: (1, 1), fields: fields)
    }
}
