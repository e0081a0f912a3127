import Testing

@testable import Gateway

/// `path_template` syntax and matching: what a template may be, and what it captures from a
/// normalized path.
@Suite("Path templates: syntax and matching")
struct PathTemplateTests {
    static func t(_ text: String) throws -> PathTemplate { try PathTemplate(parsing: text) }

    @Test func segmentsVariablesAndRest() throws {
        let a = try Self.t("/orders/{order_id}/items/{item}")
        #expect(a.segments == [.literal("orders"), .variable("order_id"), .literal("items"), .variable("item")])
        #expect(a.literalCount == 2 && a.variableCount == 2 && !a.hasRest)
        #expect(a.names == ["order_id", "item"])
        let b = try Self.t("/files/{path*}")
        #expect(b.segments == [.literal("files"), .rest("path")])
        #expect(b.hasRest && b.names == ["path"])
        let c = try Self.t("/{A_1}")
        #expect(c.segments == [.variable("A_1")])
        // Literal segments keep the escapes a normalized path keeps.
        #expect(try Self.t("/caf%C3%A9/{x}").segments.first == .literal("caf%C3%A9"))
        #expect(try Self.t("/~u:@!$/{x}").segments.first == .literal("~u:@!$"))
    }

    @Test(
        "refusals",
        arguments: [
            ("orders/{id}", PathTemplate.Refusal.notAbsolute), ("", .notAbsolute), ("/", .noVariable),
            ("/orders", .noVariable), ("/orders/{id", .unclosedBrace), ("/orders/{id/x}", .unclosedBrace),
            ("/{a{b}}", .unclosedBrace), ("/orders/id}", .strayBrace), ("/}{id}", .strayBrace),
            ("/orders/{}", .emptyName), ("/orders/{*}", .emptyName), ("/{a-b}", .badName("a-b")),
            ("/{a.b}", .badName("a.b")), ("/{caf\u{e9}}", .badName("caf\u{e9}")), ("/{a b}", .badName("a b")),
            ("/{a**}", .badName("a*")), ("/{\u{301}rsion}", .badName("\u{301}rsion")),
            ("/{id}/x/{id}", .repeatedName("id")), ("/{id}/{id*}", .repeatedName("id")),
            ("/{rest*}/x", .restNotLast("rest")), ("/{rest*}/{id}", .restNotLast("rest")),
            ("/files/{name}.json", .partialSegment("{name}.json")), ("/v{n}", .partialSegment("v{n}")),
            ("/{a}{b}", .partialSegment("{a}{b}")), ("//{id}", .emptySegment), ("/a//{id}", .emptySegment),
            ("/{id}/", .trailingSlash), ("/./{id}", .notNormal(".")), ("/../{id}", .notNormal("..")),
            ("/%41/{id}", .notNormal("%41")), ("/caf%c3%a9/{id}", .notNormal("caf%c3%a9")),
            ("/a?b/{id}", .notNormal("a?b")), ("/a#b/{id}", .notNormal("a#b")), ("/a;b/{id}", .notNormal("a;b")),
            ("/a%2F/{id}", .notNormal("a%2F"))
        ])
    func refusals(_ text: String, _ expected: PathTemplate.Refusal) {
        #expect(throws: expected) { try PathTemplate(parsing: text) }
        #expect(!expected.message.isEmpty)
    }

    /// What each normalized path captures, or nil: a variable is one non-empty segment, `{x*}`
    /// one or more characters to the end, and one trailing "/" is allowed (kept by `{x*}`).
    @Test(
        "matching",
        arguments: [
            ("/orders/{id}", "/orders/42", ["id": "42"]), ("/orders/{id}", "/orders/42/", ["id": "42"]),
            ("/orders/{id}", "/orders/", nil), ("/orders/{id}", "/orders", nil), ("/orders/{id}", "/orders/4/2", nil),
            ("/orders/{id}", "/orders/42//", nil), ("/orders/{id}", "/ordersx/42", nil), ("/orders/{id}", "/", nil),
            ("/orders/{id}", "/orders/a%20b", ["id": "a%20b"]),
            ("/orders/{id}", "/orders/caf%C3%A9", ["id": "caf%C3%A9"]),
            ("/orders/{id}/items/{item}", "/orders/1/items/2", ["id": "1", "item": "2"]),
            ("/orders/{id}/items/{item}", "/orders/1/items", nil),
            ("/files/{p*}", "/files/a", ["p": "a"]), ("/files/{p*}", "/files/a/b/c", ["p": "a/b/c"]),
            ("/files/{p*}", "/files/a/", ["p": "a/"]), ("/files/{p*}", "/files/", nil), ("/files/{p*}", "/files", nil),
            ("/{p*}", "/x", ["p": "x"]), ("/{p*}", "/", nil), ("/{a}/{b*}", "/x/y/z", ["a": "x", "b": "y/z"]),
            ("/caf%C3%A9/{x}", "/caf%C3%A9/1", ["x": "1"])
        ] as [(String, String, [String: String]?)])
    func matching(_ template: String, _ path: String, _ expected: [String: String]?) throws {
        let got = try Self.t(template).parameters(in: path)
        #expect(got.map { Dictionary(uniqueKeysWithValues: $0.list.map { ($0.name, $0.value) }) } == expected)
        #expect(PathPattern.template(try Self.t(template)).matches(path) == (expected != nil))
    }

    @Test func parametersKeepTemplateOrder() throws {
        let p = try #require(try Self.t("/{z}/{a}/{m*}").parameters(in: "/1/2/3/4"))
        #expect(p.list.map(\.name) == ["z", "a", "m"])
        #expect(p.list.map(\.value) == ["1", "2", "3/4"])
        #expect(p["a"] == "2" && p["nope"] == nil && !p.isEmpty && PathParameters.none.isEmpty)
    }

    /// Percent-encoding follows `PathNormalizer`: a request's escapes of unreserved bytes are
    /// decoded before matching, so `%34%32` captures "42"; other escapes stay, uppercase.
    @Test func capturesAreTheNormalizedSegment() throws {
        let t = try Self.t("/orders/{id}")
        for (target, value) in [("/orders/%34%32", "42"), ("/orders/a%2fb", nil), ("/orders/%e2%82%ac", "%E2%82%AC")] {
            switch PathNormalizer.normalize(target: target) {
            case .success(let n): #expect(t.parameters(in: n.path)?["id"] == value, "\(target)")
            case .failure: #expect(value == nil, "\(target) is refused before routing")
            }
        }
    }

    @Test func rankOrdersLiteralsThenNoRestThenFewerVariables() throws {
        let ranked = try ["/a/b/{x}", "/a/{x}/{y}", "/a/{x}/{r*}", "/a/{r*}", "/{x}/{y}/{z}"].map(Self.t)
        let sorted = ranked.sorted { $1.rank.lexicographicallyPrecedes($0.rank) }
        #expect(sorted.map(\.text) == ["/a/b/{x}", "/a/{x}/{y}", "/a/{r*}", "/a/{x}/{r*}", "/{x}/{y}/{z}"])
        #expect(try Self.t("/a/{x}").shape == Self.t("/a/{y}").shape)
        #expect(try Self.t("/a/{x}").shape != Self.t("/a/{y*}").shape)
    }
}
