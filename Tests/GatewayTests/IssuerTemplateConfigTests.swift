import OAuth
import Testing

@testable import Gateway

@Suite("Config: issuer templates (tenants, tenant_claim, discovery_tenant) and issuer_aliases")
struct IssuerTemplateConfigTests {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/etc/tg", cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    func config(_ issuer: String, route: String = "auth: bearer\n    issuers: [entra]", clients: String = "") -> String
    {
        """
        issuers:
          entra: { \(issuer) }
        \(clients)
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path_prefix: / }
            upstream: a
            \(route)
        """
    }

    let entra =
        "issuer: \"https://login.microsoftonline.com/{tenant}/v2.0\", discovery: true, audiences: [api://orders], tenants: [t1, t2]"

    @Test func templateWithTenants() throws {
        let cfg = try parse(config(entra)).get()
        let issuer = try #require(cfg.issuers["entra"])
        #expect(issuer.tenants == .only(["t1", "t2"]) && issuer.tenantClaim == "tid")
        #expect(issuer.template?.filled("t1") == "https://login.microsoftonline.com/t1/v2.0")
        #expect(issuer.discoveryBase == "https://login.microsoftonline.com/organizations/v2.0")
        #expect(issuer.discoveryAlsoNamed.contains("https://login.microsoftonline.com/{tenantid}/v2.0"))
        #expect(cfg.warnings.isEmpty)
    }

    @Test func tenantClaimAndDiscoveryTenant() throws {
        let cfg = try parse(config(entra + ", tenant_claim: tenant, discovery_tenant: common")).get()
        #expect(cfg.issuers["entra"]?.template?.tenantClaim == "tenant")
        #expect(cfg.issuers["entra"]?.discoveryBase == "https://login.microsoftonline.com/common/v2.0")
    }

    @Test func anyTenantIsAllowedWithAWarning() throws {
        let cfg = try parse(config(entra.replacingOccurrences(of: "[t1, t2]", with: "any"))).get()
        #expect(cfg.issuers["entra"]?.tenants == .any)
        #expect(
            cfg.warnings.contains { $0.path == "issuers.entra.tenants" && $0.message.contains("anyone can create") })
    }

    @Test func templateWithoutTenantsIsRefused() {
        #expect(
            problems(config(entra.replacingOccurrences(of: ", tenants: [t1, t2]", with: ""))).contains(
                "issuers.entra.tenants: is required with {tenant} in issuer"))
    }

    @Test func tenantsWithoutATemplateAreRefused() {
        #expect(
            problems(config("issuer: \"https://idp.example\", discovery: true, audiences: [a], tenants: [t1]"))
                .contains("issuers.entra.issuer: has no {tenant}"))
        #expect(
            problems(config("issuer: \"https://x/{tenant}/{tenant}\", discovery: true, audiences: [a], tenants: [t1]"))
                .contains("may hold {tenant} once"))
    }

    @Test func badTenantIdsAreRefused() {
        for bad in ["\"a/b\"", "\"\"", "\"{tenantid}\""] {
            #expect(
                problems(config(entra.replacingOccurrences(of: "[t1, t2]", with: "[\(bad)]"))).contains(
                    "is not a tenant id"), "\(bad)")
        }
        #expect(problems(config(entra.replacingOccurrences(of: "[t1, t2]", with: "[]"))).contains("is empty"))
        #expect(problems(config(entra + ", discovery_tenant: \"a/b\"")).contains("must be one path segment"))
    }

    @Test func issuerAliases() throws {
        let cfg = try parse(
            config(
                "issuer: https://accounts.google.com, discovery: true, audiences: [a], issuer_aliases: [accounts.google.com]"
            )
        ).get()
        #expect(cfg.issuers["entra"]?.issuerAliases == ["accounts.google.com"])
        #expect(cfg.issuers["entra"]?.template == nil)
    }

    @Test func whatATemplateCannotServeIsRefused() {
        let login = """
            clients:
              web: { issuer: entra, client_id: app, auth: client_secret_jwt, secret: "0123456789abcdef0123456789abcdef", request_mode: par, response_mode: jwt }
            session: { keys: ["\(String(repeating: "A", count: 43))"] }
            public_url: https://gw.example
            """
        let text = problems(config(entra, route: "auth: login\n    client: web", clients: login))
        #expect(text.contains("clients.web.assertion_audience: must be endpoint"))
        #expect(text.contains("clients.web.request_mode: must be plain"))
        #expect(text.contains("clients.web.response_mode: must be query"))
    }

    @Test func templateAliasesShareTheTenants() throws {
        let cfg = try parse(config(entra + ", issuer_aliases: [\"https://sts.windows.net/{tenant}/\"]")).get()
        let issuer = try #require(cfg.issuers["entra"])
        #expect(
            issuer.templates.map(\.template) == [
                "https://login.microsoftonline.com/{tenant}/v2.0", "https://sts.windows.net/{tenant}/"
            ])
        #expect(issuer.templates.allSatisfy { $0.tenants == .only(["t1", "t2"]) })
        #expect(
            problems(config(entra + ", issuer_aliases: [https://sts.windows.net/t1/]")).contains(
                "must hold {tenant} once"))
        #expect(
            problems(
                config("issuer: https://x, discovery: true, audiences: [a], issuer_aliases: [\"https://y/{tenant}\"]")
            )
            .contains("only a {tenant} issuer with tenants has template aliases"))
    }
}
