import JOSE

/// The `tools/list` filter's side of MCPFuzz: the event-stream reader and the relay on
/// arbitrary bytes, as an upstream's answer.
extension MCPFuzzEntry {
    /// The reader loses and invents no byte, wherever the stream is cut; the relay never lets
    /// the response to the request name a tool the caller may not call.
    static func eventStream(_ data: [UInt8]) {
        let cut = data.isEmpty ? 0 : Int(data[0]) % (data.count + 1)
        var whole = EventStreamReader(maxEventBytes: 1 << 20)
        var split = EventStreamReader(maxEventBytes: 1 << 20)
        guard let all = try? whole.feed(data), let first = try? split.feed(data[..<cut]),
            let second = try? split.feed(data[cut...])
        else { return fuzzInvariant(false, "sse: an event under the bound was refused") }
        let parts = first + second
        fuzzInvariant(all.flatMap(\.raw) + whole.pending == data, "sse: the events are not the stream's bytes")
        fuzzInvariant(parts.flatMap(\.raw) + split.pending == data, "sse: a cut stream's events are not its bytes")
        fuzzInvariant(
            all.map(\.data) == parts.map(\.data) && all.map(\.fieldLines) == parts.map(\.fieldLines),
            "sse: a cut changes what the events say")
        let filter = ToolListFilter(id: .number("1"), maxBytes: 1 << 20, mayCall: { $0 != "deploy" })
        var relay = ToolListRelay(filter: filter)
        guard let out = try? relay.stream(data) else { return }
        // Every response to the request, however many copies the stream holds: a client may
        // read any of them.
        var reader = EventStreamReader(maxEventBytes: 1 << 21)
        for event in (try? reader.feed(out)) ?? [] {
            guard let data = event.data, let value = try? JSONParser.parse(data) else { continue }
            for message in value.array ?? [value] {
                guard let object = message.object, object["method"] == nil, object["id"] == .number("1"),
                    let tools = object["result"]?.object?["tools"]?.array
                else { continue }
                fuzzInvariant(
                    !tools.contains { $0.object?["name"]?.string == "deploy" }, "sse: a hidden tool was listed")
            }
        }
    }
}
