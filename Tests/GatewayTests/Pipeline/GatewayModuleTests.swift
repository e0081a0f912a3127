import Foundation
import JOSE
import Logging
import Testing
import Yams

@testable import Gateway
@testable import Reactor

/// A whole capability written here, outside the gateway's files: what adding one takes. Its
/// module brings a top-level key (`greeting: { text, header }`) with a section of fixed keys,
/// a check across sections, a part the process keeps (one count for every worker), a service
/// on each worker with its metrics and status, a keyed stage (`greet: true`) that sends the
/// greeting upstream with the caller's identity, and an endpoint of its own
/// (`/.well-known/greeting`) on a built-in route of its own.
enum Greetings: GatewayModule {
    struct Config: Sendable {
        var text = ""
        var header = "X-Greeting"
    }

    static var key: ConfigKeyDoc? {
        ConfigKeyDoc(name: "greeting", type: "mapping (below)", defaultText: "none", defaultCheck: nil)
    }
    static var sections: [ConfigSection] { [greetingSection] }
    static var unset: Config { Config() }
    static var stages: [any ModuleStage.Type] { [GreetStage.self] }
    static var steps: [ConfigStep] {
        [
            ConfigStep("greeting routes", .check) { cfg, top, r in
                if cfg.greeting.text.isEmpty
                    && cfg.routes.contains(where: { $0.options.settings.has(GreetStage.On.self) })
                {
                    r.problem("routes", top["routes"], "a route has greet: true but there is no greeting.text")
                }
            }
        ]
    }

    static let keyTable = ConfigKeyTable<Config, ConfigReader>([
        .init("text", type: "string", default: "none") { c, n, p, r in
            if let s = r.string(n, path: p) { c.text = s }
        },
        .init("header", type: "header name", default: "`X-Greeting`") { c, n, p, r in
            if let s = r.string(n, path: p) { c.header = s }
        }
    ])
    static let greetingSection = ConfigSection("greeting") { keyTable.docs }

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> Config {
        var c = Config()
        if let m = r.mapping(node, path: "greeting", section: greetingSection) {
            keyTable.read(m, into: &c, path: "greeting", r)
        }
        return c
    }

    /// What the process keeps: every worker's greetings in one count.
    final class Shared: @unchecked Sendable {
        var total = 0
    }

    static func endpoints(_ config: GatewayConfig) -> [String: ModuleEndpoint] {
        guard !config.greeting.text.isEmpty else { return [:] }
        let text = config.greeting.text
        return [
            "/.well-known/greeting": ModuleEndpoint(name: "greeting", route: .own("greeting")) { request, services in
                services.modules[Greetings.self].greeted()
                return .answer(GatewayResponse(status: 200, body: text, contentType: "text/plain"))
            }
        ]
    }

    static func routes(_ config: GatewayConfig) -> [String: RouteConfig] { ["greeting": OwnRoutes.route("greeting")] }

    static func makeShared(_ stores: StoreBackend) -> Shared { Shared() }
    static func makeService(_ shared: Shared, _ context: ModuleContext) -> Greeter { Greeter(shared: shared) }
}

extension GatewayConfig {
    var greeting: Greetings.Config { self[module: Greetings.self] }
}

/// The module's service on one worker: it counts its greetings.
final class Greeter: ModuleService {
    let shared: Greetings.Shared
    private(set) var metrics = GreetingMetrics()
    private(set) var applied = 0
    var status: GreetingStatus { GreetingStatus(greeted: metrics.greeted) }

    init(shared: Greetings.Shared) { self.shared = shared }

    func apply(_ config: GatewayConfig) { applied += 1 }

    func greeted() {
        metrics.greeted += 1
        shared.total += 1
    }
}

struct GreetingMetrics: ModuleMetrics {
    var greeted = 0
    mutating func add(_ other: GreetingMetrics) { greeted += other.greeted }
    func write(to out: inout PrometheusText) {
        out.single("tokengate_greetings_total", .counter, help: "Requests greeted.", greeted)
    }
}

struct GreetingStatus: ModuleStatus {
    var greeted = 0
    mutating func add(_ other: GreetingStatus) { greeted += other.greeted }
    func section(_ config: GatewayConfig) -> StatusSection? {
        StatusSection(
            name: "greetings", json: .object(JSONObject(["greeted": .number(String(greeted))])),
            html: "<h2>Greetings</h2><p id=\"greetings\">\(greeted)</p>")
    }
}

/// `greet: true`: the route's requests carry the greeting upstream.
final class GreetStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>("greet", type: "bool", default: "`false`") {
        route, node, path, context in
        if context.r.bool(node, path: path) == true { route.options.settings[On.self] = true }
    }
    enum On: RouteSettingKey { typealias Value = Bool }
    static let position = StagePosition.afterAuthentication

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> GreetStage? {
        guard plan.route.options.settings.has(On.self) else { return nil }
        return GreetStage(greeting: services.config.greeting, greeter: services.modules[Greetings.self])
    }

    let greeting: Greetings.Config
    let greeter: Greeter
    init(greeting: Greetings.Config, greeter: Greeter) {
        self.greeting = greeting
        self.greeter = greeter
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        greeter.greeted()
        request.admission?.identity.append((greeting.header, greeting.text))
        return .proceed
    }
}

@Suite("Modules: a capability with its own section, service and stage, added from outside the gateway")
struct GatewayModuleTests {
    static let catalog = ModuleCatalog.gateway.adding(Greetings.self)
    static let yaml =
        "greeting: { text: hello, header: X-Hello }\n"
        + PipelineConfigs.yaml.replacingOccurrences(
            of: "  - name: public\n", with: "  - name: public\n    greet: true\n")

    func parse(_ yaml: String, _ catalog: ModuleCatalog = Self.catalog) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1, modules: catalog)
    }

    func problems(_ yaml: String, _ catalog: ModuleCatalog = Self.catalog) -> [String] {
        guard case .failure(let error) = parse(yaml, catalog) else { return [] }
        return error.problems.map(\.description)
    }

    func worker(_ stores: StoreBackend = StoreBackend(.memory, replayCapacity: 100)) throws -> Worker {
        Worker(
            id: 0, config: try parse(Self.yaml).get(), log: Logger(label: "test"), processPrefix: "t", stores: stores)
    }

    @Test func withoutTheModuleItsKeysAreUnknown() {
        let found = problems(Self.yaml, .gateway)
        #expect(found.contains { $0.contains("greeting: is not a known key") }, "\(found)")
        #expect(found.contains { $0.contains("greet: is not a known key") }, "\(found)")
    }

    @Test func itsSectionIsReadWithItsKeys() throws {
        let cfg = try parse(Self.yaml).get()
        #expect(cfg.greeting.text == "hello" && cfg.greeting.header == "X-Hello")
        let typo = Self.yaml.replacingOccurrences(of: "header: X-Hello", with: "heder: X-Hello")
        #expect(problems(typo).contains { $0.contains("greeting.heder: is not a known key; did you mean \"header\"") })
    }

    @Test func itsStepChecksTheRoutesAgainstItsSection() {
        let found = problems(Self.yaml.replacingOccurrences(of: "text: hello, ", with: ""))
        #expect(found.contains { $0.contains("greet: true but there is no greeting.text") }, "\(found)")
    }

    @Test func itsKeyAndSectionAreInTheReferenceOfItsCatalog() {
        #expect(Self.catalog.topKeyDocs.contains { $0.name == "greeting" })
        #expect(Self.catalog.sections.map(\.rawValue).contains("greeting"))
        #expect(!ConfigSection.allCases.map(\.rawValue).contains("greeting"), "the gateway's own reference")
    }

    @Test func itsStageSendsTheGreetingUpstreamAndItsServiceCountsIt() throws {
        let w = try worker()
        let h = try StageHarness(w, "GET", "/public/x")
        #expect(h.chain.contains("GreetStage"))
        h.request.next = 1
        h.request.resume()
        #expect(h.transport.status == 0, "not refused")
        #expect(h.request.admission?.identity.contains { $0 == ("X-Hello", "hello") } == true)
        let greeter = w.services.modules[Greetings.self]
        #expect(greeter.metrics.greeted == 1 && greeter.applied == 1)
        let other = try StageHarness(w, "GET", "/api/x")
        #expect(!other.chain.contains("GreetStage"), "only the route that sets the key")
    }

    @Test func aReloadMakesItsStageFromTheNewConfig() throws {
        let w = try worker()
        let new = try parse(Self.yaml.replacingOccurrences(of: "text: hello", with: "text: bonjour")).get()
        w.apply(new)
        let h = try StageHarness(w, "GET", "/public/x")
        #expect(h.stage(GreetStage.self)?.greeting.text == "bonjour", "made from the config it replaces")
    }

    @Test func itsEndpointIsAnsweredOnItsOwnRouteBeforeRouting() throws {
        let w = try worker()
        let (exchange, transport) = InMemoryTransport.exchange(
            "GET", "/.well-known/greeting", fields: [("Host", "app.example")])
        w.handle(exchange)
        #expect(transport.status == 200 && String(decoding: transport.body, as: UTF8.self) == "hello")
        #expect(w.services.modules[Greetings.self].metrics.greeted == 1)
        let plan = w.services.requestPolicy.ownRoutes.modules["greeting"]
        #expect(plan?.name == "greeting")
    }

    @Test func itsProcessPartIsSharedAndItsMetricsAndStatusAreAddedUp() throws {
        let stores = StoreBackend(.memory, replayCapacity: 100)
        let (a, b) = (try worker(stores), try worker(stores))
        for w in [a, b, a] {
            let h = try StageHarness(w, "GET", "/public/x")
            h.request.next = 1
            h.request.resume()
        }
        #expect(a.services.modules[Greetings.self].shared === b.services.modules[Greetings.self].shared)
        #expect(a.services.modules[Greetings.self].shared.total == 3)
        var metrics = a.snapshot()
        metrics.add(b.snapshot())
        #expect(metrics.prometheusText(ready: true).contains("tokengate_greetings_total 3"))
        var status = a.statusSnapshot()
        status.add(b.statusSnapshot())
        let section = try #require(status.modules.sections(a.config).first { $0.name == "greetings" })
        #expect(section.json == .object(JSONObject(["greeted": .number("3")])))
    }
}
