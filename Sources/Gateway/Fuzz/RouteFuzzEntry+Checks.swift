import JOSE
import OAuth
import Reactor

/// What `RouteFuzzEntry` checks of each stage.
extension RouteFuzzEntry {
    /// A small table with every kind of rule: exact and prefix paths (with and without a
    /// trailing "/", an escape, a "~" and a "." in them), templates (one and two variables,
    /// `{name*}`, an escaped literal, under a prefix and beside an exact path), exact and
    /// wildcard hosts, method lists.
    static let routes: [RouteConfig] = {
        let table: [(host: String?, path: PathPattern, methods: Set<HTTPMethod>?)] = [
            (nil, .prefix("/api"), nil), (nil, .prefix("/api/admin/"), [.GET, .POST]), (nil, .exact("/login"), nil),
            ("app.example.com", .prefix("/"), nil), ("*.example.com", .prefix("/static/"), nil),
            (nil, .prefix("/public/"), nil), (nil, .exact("/api/health"), nil),
            ("app.example.com", .exact("/admin"), [.GET]), (nil, .prefix("/caf%C3%A9"), nil),
            (nil, .prefix("/~user/"), nil), ("*.apps.example.com", .exact("/"), nil), (nil, .prefix("/a.b"), [.PUT]),
            (nil, .template(templates[0]), nil), (nil, .template(templates[1]), [.GET]),
            (nil, .template(templates[2]), nil), (nil, .template(templates[3]), nil),
            ("app.example.com", .template(templates[4]), nil), (nil, .template(templates[5]), nil),
            (nil, .template(templates[6]), [.DELETE])
        ]
        return table.enumerated().map { i, r in
            RouteConfig(
                index: i, name: "r\(i)",
                match: RouteMatch(host: r.host.flatMap(HostPattern.init), path: r.path, methods: r.methods),
                upstream: "u")
        }
    }()
    static let router = Router(routes: routes)

    /// The table's templates, held here as well as in `routes`: inside `PathPattern`, an enum
    /// with several payloads, a template's array is stored with the case in its pointer's
    /// spare bits, which LeakSanitizer's scan at exit does not read as a pointer (it reported
    /// each template's segments as leaked).
    static let templates: [PathTemplate] = [
        "/api/{version}/health", "/orders/{id}", "/orders/{id}/items/{item}", "/public/{path*}", "/{tenant}/admin",
        "/caf%C3%A9/{x}", "/{a}/{b}"
    ].map { text in
        guard let t = try? PathTemplate(parsing: text) else { preconditionFailure("\(text) is a template") }
        return t
    }

    /// `HostNormalizer`: what it returns is a lowercase name without port or trailing dot (or an
    /// IP literal), normalizes to itself, and does not depend on the case of the input.
    static func checkHost(_ raw: String) -> String? {
        let host = HostNormalizer.normalize(raw)
        let upper = String(decoding: raw.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 & ~0x20 : $0 }, as: UTF8.self)
        fuzzInvariant(HostNormalizer.normalize(upper) == host, "host: the case of the Host value changes its host")
        guard let host else { return nil }
        fuzzInvariant(HostNormalizer.normalize(host) == host, "host: the normal form is not normal")
        let isLiteral = host.hasPrefix("[") && host.hasSuffix("]") && !host.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }
        fuzzInvariant(HostPattern.validName(host) || isLiteral, "host: not a valid name or IP literal")
        return host
    }

    /// `PathNormalizer`'s result: an absolute path of pchars and "/" with no empty, "." or ".."
    /// segment, escapes only for bytes that must stay escaped (uppercase hex), none of them "/",
    /// "\", ";" or a control character; normal already; every path a `..` left (where it stood
    /// before) normal too; the query the target's own.
    static func checkPath(_ n: PathNormalizer.Normalized, target: String) {
        checkNormalPath(n.path)
        fuzzInvariant(
            PathNormalizer.normalize(target: n.path) == .success(.init(path: n.path, query: nil, dotDotOrigins: [])),
            "path: the normal form is not normal")
        for origin in n.dotDotOrigins {
            checkNormalPath(origin)
            fuzzInvariant(origin.hasSuffix("/"), "path: a dot-segment origin without its trailing slash")
        }
        let bytes = Array(target.utf8)
        let query = bytes.firstIndex(of: UInt8(ascii: "?")).map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) }
        fuzzInvariant(n.query == query, "path: the query is not the target's")
    }

    private static func checkNormalPath(_ path: String) {
        let b = Array(path.utf8)
        fuzzInvariant(b.first == UInt8(ascii: "/"), "path: not absolute")
        let segments = b.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        for (k, s) in segments.enumerated() {
            let last = k == segments.count - 1
            fuzzInvariant(!s.isEmpty || last, "path: an empty segment (\"//\")")
            fuzzInvariant(!s.elementsEqual([0x2E]) && !s.elementsEqual([0x2E, 0x2E]), "path: a dot segment is left")
        }
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "%") {
                fuzzInvariant(i + 2 < b.count, "path: a cut escape")
                let hi = b[i + 1]
                let lo = b[i + 2]
                let upperHex = { (c: UInt8) in (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) }
                fuzzInvariant(upperHex(hi) && upperHex(lo), "path: an escape not in uppercase hex")
                let v = PathNormalizer.hexValue(hi)! << 4 | PathNormalizer.hexValue(lo)!
                fuzzInvariant(!PathNormalizer.isUnreserved(v), "path: an unreserved byte left escaped")
                fuzzInvariant(
                    v >= 0x20 && v != 0x7F && v != UInt8(ascii: "/") && v != UInt8(ascii: "\\")
                        && v != UInt8(ascii: ";"),
                    "path: an escaped byte the normalizer refuses")
                i += 3
                continue
            }
            fuzzInvariant(
                b[i] == UInt8(ascii: "/") || (PathNormalizer.isPchar(b[i]) && b[i] != UInt8(ascii: ";")),
                "path: a byte that must be escaped")
            i += 1
        }
    }

    /// `Router.decide`, checked against the table itself: a route it picks matches the host,
    /// method and normalized path, and is the most specific that does (host, then path, then
    /// a method list, then table order); every path a `..` left is served by that same route
    /// (so a request accepted under a prefix never climbed out of it), and so is the path as
    /// written when a template route takes it; when one is not, or the path matches nothing
    /// after a `..`, the decision is `.escapesRoute`.
    static func checkedDecision(_ host: String, _ method: HTTPMethod, _ n: PathNormalizer.Normalized) -> Router.Decision
    {
        let decision = router.decide(host: host, method: method, normalized: n)
        let best = mostSpecific(host, method, n.path)
        // The template route the path as written (its `..` kept) is in, when not `best`'s.
        let writtenElsewhere =
            n.spelled.flatMap { mostSpecific(host, method, $0) }.map { written in
                written != best && { if case .template = routes[written].match.path { true } else { false } }()
            } ?? false
        switch decision {
        case .route(let i):
            fuzzInvariant(best == i, "route: not the most specific matching route")
            for origin in n.dotDotOrigins {
                fuzzInvariant(
                    routes[i].match.path.matches(origin) && mostSpecific(host, method, origin) == i,
                    "route: a `..` climbed out of the route it was in")
            }
            fuzzInvariant(!writtenElsewhere, "route: a `..` in a template's variable left that route")
        case .notFound:
            fuzzInvariant(best == nil && n.dotDotOrigins.isEmpty, "route: not found although a route matches")
        case .escapesRoute:
            fuzzInvariant(
                writtenElsewhere
                    || !n.dotDotOrigins.isEmpty
                        && (best == nil || n.dotDotOrigins.contains { mostSpecific(host, method, $0) != best }),
                "route: refused as escaping although every `..` stayed in its route")
        }
        return decision
    }

    /// The oracle: every route, one by one.
    static func mostSpecific(
        _ host: String, _ method: HTTPMethod, _ path: String, in routes: [RouteConfig] = routes
    ) -> Int? {
        func rank(_ r: RouteConfig) -> [Int] {
            [r.match.host?.specificity ?? 0] + r.match.path.specificity + [r.match.methods == nil ? 0 : 1, -r.index]
        }
        return routes.filter { r in
            (r.match.host?.matches(host) ?? true) && (r.match.methods?.contains(method) ?? true)
                && r.match.path.matches(path)
        }.max { rank($0).lexicographicallyPrecedes(rank($1)) }?.index
    }

    /// The DPoP check on this request (RFC 9449 §4.3 check 9), as `TokenAuthenticator` makes
    /// it: a proof whose `htu` names the target as the client sent it (any encoding, any dot
    /// segments) matches the request URI the gateway builds from the normalized path; one
    /// that names the normalized path with one more segment does not.
    static func checkHTU(host: String, target: String, normalized n: PathNormalizer.Normalized) {
        let authority = host.isEmpty ? "gw.example" : host
        let request = HTU.normalize(requestURI: "https://\(authority)\(n.path)")
        let sent = String(decoding: target.utf8.prefix { $0 != UInt8(ascii: "?") }, as: UTF8.self)
        let claim = HTU.normalize("https://\(authority)\(sent)", normalizePath: TokenAuthenticator.normalizePath)
        guard let request else { return }
        fuzzInvariant(claim == request, "htu: a proof for the target as sent does not match its request")
        let other = HTU.normalize(
            "https://\(authority)\(n.path)\(n.path.hasSuffix("/") ? "" : "/")x",
            normalizePath: TokenAuthenticator.normalizePath)
        fuzzInvariant(other != request, "htu: a proof for another path matches the request")
    }
}
