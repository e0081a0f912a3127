import JOSE
import Reactor

/// What `RouteFuzzEntry` checks of a route's `path_template`.
extension RouteFuzzEntry {
    static let templateHost = "gw.example"

    /// One template and one request target: the template is refused, or it reads back as
    /// written; a path built from it (its variables filled from the target's segments) matches
    /// it and gives those values back; and routed beside the fixed table (`routes`), the
    /// normalized target goes to the route the oracle picks, whose captures, put back into
    /// the template, give the path again.
    static func template(_ text: String, target: String, method: HTTPMethod) {
        let parsed: PathTemplate
        do throws(PathTemplate.Refusal) {
            parsed = try PathTemplate(parsing: text)
        } catch {
            fuzzInvariant(!error.message.isEmpty, "template: a refusal without a reason")
            return
        }
        fuzzInvariant(written(parsed) == text, "template: does not read back as written")
        fuzzInvariant(parsed.variableCount > 0, "template: accepted without a variable")
        let normalized = try? PathNormalizer.normalize(target: target).get()
        checkBuiltPath(parsed, from: normalized?.path ?? "/")
        guard let n = normalized else { return }
        let table =
            routes
            + [
                RouteConfig(
                    index: routes.count, name: "t", match: RouteMatch(host: nil, path: .template(parsed), methods: nil),
                    upstream: "u")
            ]
        let got = Router(routes: table).matchIndex(host: templateHost, method: method, path: n.path)
        fuzzInvariant(
            got == mostSpecific(templateHost, method, n.path, in: table),
            "template: not the most specific matching route")
        if let got, let t = table[got].match.path.template {
            guard let values = t.parameters(in: n.path) else {
                fuzzInvariant(false, "template: the chosen template captures nothing")
                return
            }
            // The path's trailing "/" is its own when the template has no `{name*}` to hold it.
            let back = expanded(t, values)
            fuzzInvariant(
                back == n.path || (!t.hasRest && back + "/" == n.path), "template: its values do not give the path back"
            )
        }
    }

    /// A path made of the template's literals and, for its variables, segments taken in turn
    /// from `path` ("x" when it has none): it matches, with exactly those values.
    private static func checkBuiltPath(_ t: PathTemplate, from path: String) {
        var pool = path.split(separator: "/").map(String.init)
        if pool.isEmpty { pool = ["x"] }
        var values: [PathParameters.Parameter] = []
        for (k, segment) in t.segments.enumerated() {
            switch segment {
            case .literal: break
            case .variable(let name):
                values.append(.init(name: name, value: pool[k % pool.count]))
            case .rest(let name):
                values.append(.init(name: name, value: pool[k % pool.count] + (pool.count > 1 ? "/" + pool[0] : "")))
            }
        }
        let built = expanded(t, PathParameters(values))
        fuzzInvariant(
            t.parameters(in: built) == PathParameters(values), "template: a path built from it does not match")
        fuzzInvariant(
            t.parameters(in: built + "/") != nil, "template: a path built from it does not match with a trailing /")
        let router = Router(routes: [
            RouteConfig(
                index: 0, name: "t", match: RouteMatch(host: nil, path: .template(t), methods: nil), upstream: "u")
        ])
        fuzzInvariant(
            router.matchIndex(host: templateHost, method: .GET, path: built) == 0, "template: the trie misses it")
    }

    /// The template's text from its segments.
    private static func written(_ t: PathTemplate) -> String {
        t.segments.map { s in
            switch s {
            case .literal(let l): "/" + l
            case .variable(let n): "/{" + n + "}"
            case .rest(let n): "/{" + n + "*}"
            }
        }.joined()
    }

    /// The template with its variables replaced by `values` (missing ones left empty).
    private static func expanded(_ t: PathTemplate, _ values: PathParameters) -> String {
        var out = ""
        for s in t.segments {
            switch s {
            case .literal(let l): out += "/" + l
            case .variable(let n), .rest(let n): out += "/" + (values[n] ?? "")
            }
        }
        return out
    }
}
