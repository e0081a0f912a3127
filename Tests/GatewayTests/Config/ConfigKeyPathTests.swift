import Testing
import Yams

@testable import Gateway

/// A check made once the sections are read finds the node of the key its problem names, by
/// that problem's key path.
@Suite("Config nodes by key path")
struct ConfigKeyPathTests {
    static let yaml = """
        session: { cookie_domain: example.com }
        issuers:
          corp.example: { issuer: "https://idp.example", introspection: { client: api } }
        routes:
          - match: { path_prefix: /a }
          - match: { path_template: "/items/{id}" }
            require: { claims: { realm_access.roles: admin } }
        """

    func top() throws -> [String: Node] {
        let node = try #require(try Yams.compose(yaml: Self.yaml))
        var out: [String: Node] = [:]
        for (key, value) in try #require(node.mapping) { out[try #require(key.string)] = value }
        return out
    }

    @Test func keysAndListItemsAreWalked() throws {
        let top = try top()
        #expect(ConfigKeyPath.node(at: "session.cookie_domain", in: top)?.string == "example.com")
        #expect(ConfigKeyPath.node(at: "routes[1].match.path_template", in: top)?.string == "/items/{id}")
        #expect(ConfigKeyPath.node(at: "routes[1].match.path_template", in: top)?.mark?.line == 6)
        #expect(ConfigKeyPath.node(at: "routes[0]", in: top)?.mapping != nil)
    }

    @Test func aNameWithDotsIsOneKey() throws {
        let top = try top()
        #expect(ConfigKeyPath.node(at: "issuers.corp.example.introspection.client", in: top)?.string == "api")
        #expect(
            ConfigKeyPath.node(at: "routes[1].require.claims.realm_access.roles", in: top)?.string == "admin")
    }

    @Test func aPathThatNamesNothingFindsNothing() throws {
        let top = try top()
        for path in ["routes[2].match", "routes[-1]", "session.cookie_name", "nope", "routes.match", "session[0]", ""] {
            #expect(ConfigKeyPath.node(at: path, in: top) == nil, "\(path)")
        }
    }

    @Test func aPathUnderAListItem() throws {
        let routes = try #require(try top()["routes"]?.sequence.map(Array.init))
        #expect(ConfigKeyPath.node(at: "match.path_template", under: routes[1])?.string == "/items/{id}")
        #expect(ConfigKeyPath.node(at: "match.path_template", under: routes[0]) == nil)
    }

    /// check-config's warnings now carry the line of the key they are about.
    @Test func aWarningNamesTheLineOfItsKey() throws {
        let top = try top()
        var cfg = GatewayConfig()
        cfg.session.cookieDomain = "example.com"
        let warning = try #require(
            ConfigParser.warnings(cfg, top: top).first { $0.path == "session.cookie_domain" })
        #expect(warning.line == 1)
    }
}
