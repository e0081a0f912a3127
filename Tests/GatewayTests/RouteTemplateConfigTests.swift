import Testing

@testable import Gateway

/// `match.path_template` as check-config reads it: what it accepts, and every refusal with the
/// YAML path it names.
@Suite("Route templates in the config")
struct RouteTemplateConfigTests: ConfigParsing {
    /// A config whose routes are `routes` (YAML list items, each indented as under `routes:`).
    func config(_ routes: String) -> String {
        """
        issuers:
          corp: { issuer: "https://idp.example.com", jwks_file: /dev/null, audiences: [api] }
        upstreams: { app: { url: "http://127.0.0.1:9000" } }
        routes:
        \(routes)
        """
    }

    func route(_ match: String, _ extra: String = "auth: none") -> String {
        "  - match: \(match)\n    upstream: app\n"
            + extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
    }

    @Test func aTemplateRouteParses() throws {
        let cfg = try parse(config(route("{ path_template: \"/orders/{order_id}\" }"))).get()
        #expect(cfg.routes[0].match.path == .template(try PathTemplate(parsing: "/orders/{order_id}")))
        #expect(cfg.routes[0].match.path.template?.names == ["order_id"])
        let rest = try parse(config(route("{ path_template: \"/files/{path*}\", methods: [GET] }"))).get()
        #expect(rest.routes[0].match.path.template?.hasRest == true)
    }

    @Test(
        "each malformed template is refused at its YAML path",
        arguments: [
            ("/orders/{id", "has a { that is not closed by } within its segment"),
            ("/orders/id}", "has a } with no { before it"), ("/orders/{}", "has a variable with an empty name"),
            ("/orders/{order-id}", "has the variable name \"order-id\": names may hold only A-Z, a-z, 0-9 and _"),
            ("/{id}/x/{id}", "names the variable id twice"),
            ("/{rest*}/x", "has {rest*} before its last segment; {name*} takes the rest of the path"),
            ("orders/{id}", "must start with /"),
            (
                "/files/{name}.json",
                "has the segment \"{name}.json\": a variable must be a whole segment, such as /{id}"
            ),
            ("/orders", "has no {variable}; use path: for an exact path"), ("/orders/{id}/", "ends with /"),
            ("/a//{id}", "has an empty segment (//)"),
            ("/%7e/{id}", "has the segment \"%7e\", which is not a normalized path segment")
        ])
    func malformed(_ template: String, _ message: String) {
        let p = problems(config(route("{ path_template: \"\(template)\" }")))
        #expect(p.contains("routes[0].match.path_template: \"\(template)\" \(message)"), "\(p)")
    }

    @Test func oneKindOfPathPerMatch() {
        for keys in [
            "{ path: /a, path_template: \"/a/{x}\" }", "{ path_prefix: /a, path_template: \"/a/{x}\" }",
            "{ path: /a, path_prefix: /a, path_template: \"/a/{x}\" }"
        ] {
            let p = problems(config(route(keys)))
            #expect(p.contains("routes[0].match: give one of path, path_prefix or path_template, not several"), "\(p)")
            #expect(p.contains("path_template"), "the message names the keys it found: \(p)")
        }
        #expect(
            problems(config(route("{ host: a.example }"))).contains(
                "routes[0].match: needs path: /exact, path_prefix: /prefix/ or path_template: /items/{id}"))
    }

    @Test func theSameTemplateTwiceOnOneHostIsAmbiguous() {
        let same = config(
            route("{ path_template: \"/orders/{id}\" }") + "\n" + route("{ path_template: \"/orders/{order}\" }"))
        let p = problems(same)
        #expect(
            p.contains(
                "routes[1].match.path_template: \"/orders/{order}\" matches the same paths as routes[0]'s \"/orders/{id}\" on the same host"
            ), "\(p)")
        #expect(p.contains("ambiguous"))
        // Two method lists that share a method compete too; the message says so.
        let methods = config(
            route("{ path_template: \"/o/{id}\", methods: [GET, PUT] }") + "\n"
                + route("{ path_template: \"/o/{id}\", methods: [PUT] }"))
        #expect(problems(methods).contains("for the same methods"))
        // A named route is named.
        let named = config(
            "  - name: orders\n    " + route("{ path_template: \"/o/{id}\" }").dropFirst(4) + "\n"
                + route("{ path_template: \"/o/{id}\" }"))
        #expect(problems(named).contains("routes[0] (orders)'s"), "\(problems(named))")
    }

    @Test func sameTemplateOnOtherHostsOrMethodsIsNoClash() {
        for routes in [
            route("{ path_template: \"/o/{id}\", host: a.example }") + "\n" + route("{ path_template: \"/o/{id}\" }"),
            route("{ path_template: \"/o/{id}\", methods: [GET] }") + "\n"
                + route("{ path_template: \"/o/{id}\", methods: [DELETE] }"),
            // A method list beats no list: the second takes the other methods.
            route("{ path_template: \"/o/{id}\", methods: [GET] }") + "\n" + route("{ path_template: \"/o/{id}\" }"),
            route("{ path_template: \"/o/{id}\" }") + "\n" + route("{ path_template: \"/o/{id*}\" }"),
            route("{ path_template: \"/o/{id}\" }") + "\n" + route("{ path: /o/x }") + "\n"
                + route("{ path_prefix: /o/ }")
        ] {
            #expect(problems(config(routes)) == "", "\(routes)")
        }
    }

    @Test func stripPrefixNeedsAPrefixNotATemplate() {
        let p = problems(config(route("{ path_template: \"/api/{v}\" }", "auth: none\nstrip_prefix: true")))
        #expect(
            p.contains(
                "routes[0].strip_prefix: needs match.path_prefix (a path_template has no fixed prefix to strip)"),
            "\(p)")
    }

    // MARK: identity headers from path variables

    func tokenRoute(_ template: String, headers: String) -> String {
        config(
            route(
                "{ path_template: \"\(template)\" }", "auth: bearer\nissuers: [corp]\nheaders: \(headers)"))
    }

    @Test func aHeaderMayCarryAPathVariable() throws {
        let cfg = try parse(tokenRoute("/orders/{order_id}", headers: "{ X-User: sub, X-Order-Id: \"{order_id}\" }"))
            .get()
        let h = cfg.routes[0].options.forwarding.identityHeaders
        #expect(h.mapping.map(\.header) == ["X-User"])
        #expect(h.parameters.map(\.header) == ["X-Order-Id"] && h.parameters.map(\.name) == ["order_id"])
        #expect(h.headerNames.contains("X-Order-Id"))
        // Every route's identity headers are stripped from client requests: this one too.
        #expect(cfg.strippedIdentityHeaders.contains(Array("x-order-id".utf8)))
        #expect(
            h.values(forParameters: { $0 == "order_id" ? "42" : nil }).map { "\($0.0)=\($0.1)" } == ["X-Order-Id=42"])
    }

    @Test func aHeaderVariableMustBeOneOfTheTemplates() {
        let unknown = problems(tokenRoute("/orders/{order_id}", headers: "{ X-Order: \"{order}\" }"))
        #expect(
            unknown.contains(
                "routes[0].headers.X-Order: \"{order}\" is not a variable of match.path_template \"/orders/{order_id}\" (its variables: order_id)"
            ), "\(unknown)")
        let noTemplate = problems(
            config(route("{ path_prefix: /orders/ }", "auth: bearer\nissuers: [corp]\nheaders: { X-Order: \"{id}\" }")))
        #expect(
            noTemplate.contains(
                "routes[0].headers.X-Order: \"{id}\" names a path variable, and this route's match has no path_template"
            ),
            "\(noTemplate)")
        let empty = problems(tokenRoute("/orders/{order_id}", headers: "{ X-Order: \"{}\" }"))
        #expect(
            empty.contains("routes[0].headers.X-Order: \"{}\" is not a variable of match.path_template"), "\(empty)")
        let unquoted = problems(tokenRoute("/orders/{order_id}", headers: "{ X-Order: {order_id} }"))
        #expect(
            unquoted.contains("routes[0].headers.X-Order: write a path variable in quotes, \"{order_id}\""),
            "\(unquoted)")
    }
}
