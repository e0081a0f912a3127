import Testing

@testable import Gateway

@Suite("Prometheus text: one writer for every /metrics family")
struct PrometheusTextTests {
    @Test func familiesHaveHelpAndTypeBeforeTheirSamples() {
        var out = PrometheusText()
        out.labelled("t_total", .counter, help: "Things.", label: "kind", [("a", 1), ("b", 2)])
        out.single("t_up", .gauge, help: "Up.", 1)
        #expect(
            out.text == """
                # HELP t_total Things.
                # TYPE t_total counter
                t_total{kind="a"} 1
                t_total{kind="b"} 2
                # HELP t_up Up.
                # TYPE t_up gauge
                t_up 1

                """)
    }

    @Test func labelValuesFromTheConfigCannotBreakALine() {
        // A route or issuer name is config text: a quote, backslash or line feed in it must
        // stay inside the label (exposition format 0.0.4), not start a forged sample.
        var out = PrometheusText()
        out.sample("t_total", [("route", "a\"} 1\nforged_total{x=\"\\")], 3)
        #expect(out.text == "t_total{route=\"a\\\"} 1\\nforged_total{x=\\\"\\\\\"} 3\n")
        #expect(out.text.split(separator: "\n").count == 1)
    }

    @Test func helpTextEscapesBackslashAndLineFeed() {
        var out = PrometheusText()
        out.family("t", .summary, help: "two\nlines \\ here")
        #expect(out.text == "# HELP t two\\nlines \\\\ here\n# TYPE t summary\n")
    }

    @Test func workerMetricsUseIt() {
        let m = WorkerMetrics()
        let id = m.routeID("a\"b")
        m.record(routeID: id, status: 200, seconds: 0.001, at: 0)
        let text = m.snapshot(upstreamConnections: ["app": 2], clientConnections: 1, tokenCache: (3, 4)).prometheusText(
            ready: true)
        #expect(text.contains("# TYPE tokengate_requests_total counter\n"))
        #expect(text.contains("tokengate_ready 1\n"))
        #expect(text.contains("tokengate_requests_total{route=\"a\\\"b\",status=\"200\"} 1\n"))
        #expect(text.contains("tokengate_upstream_connections{upstream=\"app\"} 2\n"))
        #expect(text.contains("tokengate_token_cache_total{result=\"hit\"} 3\n"))
    }
}
