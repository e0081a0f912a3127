import Testing

@testable import Gateway

/// `tokengate_mcp_calls_total` counts each call under its own series, whichever series the
/// call before it went to (the counter remembers the last one to skip a hash).
@Suite("MCP: the call counter's series")
struct MCPCallMetricsTests {
    typealias Key = MCPCallMetrics.Key

    @Test func eachCallUnderItsOwnSeries() {
        var m = MCPCallMetrics()
        let calls: [(String, String?, MCPCallMetrics.Outcome)] = [
            ("a", "tools/call", .allowed), ("a", "tools/call", .allowed), ("a", "tools/call", .denied),
            ("b", "tools/call", .denied), ("a", "made/up", .allowed), ("a", "other", .allowed),
            ("a", "made/up", .allowed), ("a", nil, .invalid), ("a", "-", .invalid), ("a", nil, .invalid),
            ("a", "-", .invalid), ("a", "tools/call", .allowed)
        ]
        for (route, method, outcome) in calls { m.record(route: route, method: method, outcome) }
        #expect(
            m.counts == [
                Key(route: "a", method: "tools/call", outcome: .allowed): 3,
                Key(route: "a", method: "tools/call", outcome: .denied): 1,
                Key(route: "b", method: "tools/call", outcome: .denied): 1,
                Key(route: "a", method: "other", outcome: .allowed): 3,
                Key(route: "a", method: "-", outcome: .invalid): 2,
                Key(route: "a", method: "other", outcome: .invalid): 2
            ])
        var total = MCPCallMetrics()
        total.record(route: "a", method: "tools/call", .allowed)
        total.add(m)
        total.record(route: "a", method: "tools/call", .allowed)
        #expect(total.counts[Key(route: "a", method: "tools/call", outcome: .allowed)] == 5)
    }
}
