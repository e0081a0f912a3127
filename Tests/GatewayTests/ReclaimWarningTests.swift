import Testing

@testable import Gateway

/// The warning about connections reclaimed at `limits.max_connections`: the first reclaim of
/// each minute is logged, for the whole process (the metric counts them all).
@Suite("Reclaim warning: once a minute per process")
struct ReclaimWarningTests {
    @Test func firstReclaimOfEachMinuteOnly() {
        let warning = ReclaimWarning()
        #expect(warning.due(now: 100))
        #expect(!warning.due(now: 100) && !warning.due(now: 159))
        #expect(warning.due(now: 160))
        #expect(!warning.due(now: 219))
        #expect(warning.due(now: 1000))
    }

    @Test func workersRacingGetOneWarning() async {
        let warning = ReclaimWarning()
        let due = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 { group.addTask { warning.due(now: 5) } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(due == 1)
    }
}
