import Testing

@testable import Gateway

/// A route's settings by typed key: each capability reads back what it stored, as the type it
/// stored, and no other key (even of the same value type) reaches it.
@Suite("Route settings: one value per typed key")
struct RouteSettingsTests {
    enum First: RouteSettingKey { typealias Value = String }
    enum Second: RouteSettingKey { typealias Value = String }
    enum Limits: RouteSettingKey { typealias Value = [Int] }

    @Test func eachKeyReadsBackOnlyItsOwnValue() {
        var settings = RouteSettings()
        settings[First.self] = "a"
        settings[Limits.self] = [1, 2]
        #expect(settings[First.self] == "a" && settings[Limits.self] == [1, 2])
        #expect(settings[Second.self] == nil && !settings.has(Second.self), "same value type, another key")
        settings[First.self] = nil
        #expect(!settings.has(First.self) && settings.has(Limits.self))
    }

    @Test func aStageReadsItsParsedSettingAsItsOwnType() throws {
        let yaml = RateLimitConfigTests.yaml("  per-user: { key: sub, rate: 10/s }")
        let cfg = try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get()
        let policies = try #require(cfg.routes[0].options.settings[RateLimitStage.Settings.self])
        #expect(policies.count == 1)
        #expect(!cfg.routes[0].options.settings.has(AuthorizeStage.Settings.self))
    }
}
