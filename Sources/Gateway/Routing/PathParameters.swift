/// What a route's `path_template` captured from a request's normalized path: each variable's
/// name and value, in the template's order (`PathTemplate.parameters(in:)`). Empty on routes
/// matched by `path:` or `path_prefix:`. Read by the identity headers a route maps from them
/// (`headers: { X-Order-Id: "{order_id}" }`), the access log (`path_params`) and any stage
/// that judges the request by its resource (`RoutedRequest.pathParameters`).
struct PathParameters: Sendable, Equatable {
    struct Parameter: Sendable, Equatable {
        let name: String
        /// The segment (or, for `{name*}`, the rest of the path) as the normalized path has
        /// it: pchars and uppercase `%XX` escapes only, so it is always a valid field value.
        let value: String
    }

    let list: [Parameter]

    /// Nothing captured. Computed, not stored: every request's context starts with it, and an
    /// empty array costs nothing to make, where a stored static costs a once-check.
    static var none: PathParameters { PathParameters([]) }

    init(_ list: [Parameter]) { self.list = list }

    var isEmpty: Bool { list.isEmpty }

    /// The value of the variable `name`; nil when the template has none of that name.
    subscript(name: String) -> String? {
        for p in list where p.name == name { return p.value }
        return nil
    }
}
