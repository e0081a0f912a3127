import Logging
import Testing

@testable import Gateway

/// A stage whose callback comes at once: it resumes the chain from within its own `run`, then
/// returns `.suspend`, as a stage does whose store or cache answered within the call.
final class AtOnceStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>(
        "x_at_once", type: "boolean", default: "false"
    ) { route, node, path, context in
        if context.r.bool(node, path: path) == true { route.options.settings[Settings.self] = true }
    }
    enum Settings: RouteSettingKey { typealias Value = Bool }
    static let position = StagePosition.afterAuthentication

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> AtOnceStage? {
        plan.route.options.settings[Settings.self] == true ? AtOnceStage() : nil
    }

    private(set) var runs = 0
    /// Whether the stages after this one had run before its `resume()` returned.
    private(set) var laterStagesRanWithin = false

    func run(_ request: RoutedRequest) -> StageOutcome {
        runs += 1
        request.resume()
        laterStagesRanWithin = request.admission?.identity.contains { $0.0 == "X-Stamp" } == true
        return .suspend
    }
}

@Suite("The stage runner: a chain resumed from within a stage goes on once, unnested")
struct StageRunnerTests {
    enum AtOnceModule: GatewayModule {
        static var stages: [any ModuleStage.Type] { [AtOnceStage.self, StampStage.self] }
    }
    static let catalog = ModuleCatalog.gateway.adding(AtOnceModule.self)
    static let yaml = PipelineConfigs.yaml.replacingOccurrences(
        of: "  - name: public\n", with: "  - name: public\n    x_at_once: true\n    x_stamp: gate-1\n")

    @Test func aResumeWithinRunTakesTheNextStageAfterItReturns() throws {
        let config = try ConfigParser.parse(
            yaml: Self.yaml, environment: [:], baseDirectory: "/", cores: 1, modules: Self.catalog
        ).get()
        let worker = Worker(
            id: 0, config: config, log: Logger(label: "test"), processPrefix: "t",
            stores: StoreBackend(.memory, replayCapacity: 100, loginShared: LoginShared()))
        let h = try StageHarness(worker, "GET", "/public/x")
        #expect(h.chain.prefix(4) == ["UpgradeStage", "PublicRouteStage", "AtOnceStage", "StampStage"])
        h.request.next = 1
        h.request.resume()
        let stage = try #require(h.stage(AtOnceStage.self))
        #expect(stage.runs == 1)
        #expect(!stage.laterStagesRanWithin, "the next stage ran inside the resuming stage's run")
        let stamps = h.request.admission?.identity.filter { $0.0 == "X-Stamp" } ?? []
        #expect(stamps.count == 1, "the stages after it ran once: \(stamps)")
        #expect(h.transport.status == 0, "not refused")
    }
}
