import Foundation
import Logging
import Testing

@testable import Gateway
@testable import Reactor

/// A stage and its route key, written here, outside the gateway's files: what adding a route
/// option takes. The stage's file says its key (name, reference row, reader) and its place in
/// the chain; a catalog names it; nothing else changes. `x_stamp: VALUE` sends `X-Stamp:
/// VALUE` upstream with the caller's identity, and refuses a caller whose token says
/// `stamp: refused`.
final class StampStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>(
        "x_stamp", type: "header value", default: "none"
    ) { route, node, path, context in
        guard let value = context.r.string(node, path: path) else { return }
        if value.isEmpty {
            context.r.problem(path, node, "must not be empty")
        } else {
            route.options.settings[Settings.self] = value
        }
    }
    /// A route's setting of this stage: its stamp (`RouteOptions.settings`).
    enum Settings: RouteSettingKey { typealias Value = String }
    static let position = StagePosition.afterAuthentication

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> StampStage? {
        plan.route.options.settings[Settings.self].map(StampStage.init)
    }

    let value: String
    init(_ value: String) { self.value = value }

    func run(_ request: RoutedRequest) -> StageOutcome {
        if request.admitted.claims["stamp"]?.string == "refused" {
            return .answer(
                ErrorResponse.make(
                    403, error: "access_denied", description: "stamped out", requestID: request.context.requestID))
        }
        request.admission?.identity.append(("X-Stamp", value))
        return .proceed
    }
}

/// The stage's module: a route option and its stage, nothing else.
enum StampModule: GatewayModule {
    static var stages: [any ModuleStage.Type] { [StampStage.self] }
}

@Suite("Keyed stages: a route option and its stage added from outside the gateway")
struct KeyedStageTests {
    static let catalog = ModuleCatalog.gateway.adding(StampModule.self)
    static let yaml = PipelineConfigs.yaml.replacingOccurrences(
        of: "  - name: public\n", with: "  - name: public\n    x_stamp: gate-1\n")

    func parse(_ yaml: String, _ catalog: ModuleCatalog) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1, modules: catalog)
    }

    func worker(_ catalog: ModuleCatalog = Self.catalog) throws -> Worker {
        Worker(
            id: 0, config: try parse(Self.yaml, catalog).get(), log: Logger(label: "test"), processPrefix: "t",
            stores: StoreBackend(.memory, replayCapacity: 100, loginShared: LoginShared()))
    }

    @Test func withoutItsStageTheKeyIsUnknown() throws {
        guard case .failure(let error) = parse(Self.yaml, .gateway) else {
            Issue.record("x_stamp parsed without its stage")
            return
        }
        #expect(error.problems.map(\.description).contains { $0.contains("x_stamp: is not a known key") })
    }

    @Test func itsReaderChecksTheValue() throws {
        let bad = Self.yaml.replacingOccurrences(of: "x_stamp: gate-1", with: "x_stamp: \"\"")
        guard case .failure(let error) = parse(bad, Self.catalog) else {
            Issue.record("an empty x_stamp parsed")
            return
        }
        #expect(error.problems.map(\.description).contains { $0.contains("x_stamp: must not be empty") })
    }

    @Test func itsReferenceRowComesFromItsKey() {
        let row = Self.catalog.routeKeys.docs.first { $0.name == "x_stamp" }
        #expect(row?.name == "x_stamp" && row?.type == "header value" && row?.defaultText == "none")
    }

    @Test func aRouteWithTheKeyHasTheStageAfterAuthentication() throws {
        let h = try StageHarness(try worker(), "GET", "/public/x")
        #expect(h.chain.prefix(3) == ["UpgradeStage", "PublicRouteStage", "StampStage"])
        #expect(h.decisionChain == ["PublicRouteStage", "StampStage"])
        let other = try StageHarness(try worker(), "GET", "/api/x")
        #expect(!other.chain.contains("StampStage"), "only the route that sets the key")
    }

    @Test func itsEffectReachesTheUpstreamRequest() throws {
        let h = try StageHarness(try worker(), "GET", "/public/x")
        h.request.next = 1
        // The chain runs from the authentication stage to the upstream call.
        h.request.resume()
        #expect(h.transport.status == 0, "not refused")
        let stage = try #require(h.stage(StampStage.self))
        #expect(stage.value == "gate-1")
        #expect(h.request.admission?.identity.contains { $0 == ("X-Stamp", "gate-1") } == true)
    }
}
