import Reactor

/// The answer to a `tools/list` POST on its way to the client, as a byte-fed state machine
/// (no I/O; ToolListStage feeds it). MCP transports, streamable HTTP: the server answers a
/// request with `Content-Type: application/json` (one JSON object) or `text/event-stream`
/// (an SSE stream whose events are JSON-RPC messages, the response among them). A JSON answer
/// is held whole (bounded), filtered, and sent with its new length; a stream passes event by
/// event as each ends, and every event carrying the response is rewritten (ToolListFilter).
/// A stream is read to its end: a server may send a second copy of the response after the
/// first (JSON-RPC 2.0 §5 allows one, but a client may read either), and each copy is filtered.
struct ToolListRelay {
    /// How the answer is relayed, decided by its head.
    enum Mode: Equatable {
        /// Held whole, filtered, sent with a Content-Length of its own.
        case json
        /// Passed on event by event; the response event rewritten.
        case eventStream
        /// Not something a client reads a tool list from (not 2xx, another media type): as is.
        case untouched
    }

    let filter: ToolListFilter
    private var body: [UInt8] = []
    private var events: EventStreamReader
    /// A JSON answer has been filtered whole: nothing more to read. A stream never finishes.
    private(set) var finished = false
    /// A stream whose response event waits for the PDP's answers (`filter.decisions`): that
    /// event and every one after it, held in order until `release()`.
    private var held: [EventStreamReader.Event] = []
    private var heldBytes = 0
    /// The names the response event's tools have, while it waits (`stream` set it).
    private(set) var awaiting: [String]?

    init(filter: ToolListFilter) {
        self.filter = filter
        events = EventStreamReader(maxEventBytes: filter.maxBytes)
    }

    /// How an answer with this status and these fields is relayed. A coded body (RFC 9110
    /// §8.4) cannot be read to filter, and the gateway asked for none (`Accept-Encoding:
    /// identity`): refused rather than passed unread. So is a second Content-Type, which
    /// clients could read either way.
    static func mode(status: Int, fields: HTTP1Fields) throws(ToolListFilter.Refusal) -> Mode {
        guard (200..<300).contains(status) else { return .untouched }
        let types = fields.values("Content-Type")
        guard types.count <= 1 else { throw .init(reason: "the answer has more than one Content-Type") }
        let media = types.first.map(Self.mediaType) ?? "application/json"
        let mode: Mode
        switch media {
        case "application/json": mode = .json
        case "text/event-stream": mode = .eventStream
        default: return .untouched
        }
        for value in fields.values("Content-Encoding") {
            for coding in value.split(separator: ",") where Self.trimmed(coding).lowercased() != "identity" {
                throw .init(reason: "the answer has a content coding the gateway cannot read (\(value.prefix(64)))")
            }
        }
        return mode
    }

    /// Takes the next bytes of a JSON answer; past `maxBytes` it is refused.
    mutating func hold(_ bytes: [UInt8]) throws(ToolListFilter.Refusal) {
        guard body.count + bytes.count <= filter.maxBytes else {
            throw .init(reason: "the answer is larger than mcp.max_response_bytes (\(filter.maxBytes) B)")
        }
        body.append(contentsOf: bytes)
    }

    /// The tools a held JSON answer names, when the PDP must be asked about them first.
    func namesAwaitingDecisions() -> [String]? {
        guard let decisions = filter.decisions, !decisions.isDecided, !body.isEmpty else { return nil }
        return filter.toolNames(in: body)
    }

    /// The whole JSON answer as the client gets it. An empty body names no tools.
    mutating func endJSON() throws(ToolListFilter.Refusal) -> [UInt8] {
        finished = true
        defer { body = [] }
        guard !body.isEmpty else { return [] }
        return try filter.filter(message: body) ?? body
    }

    /// Takes the next bytes of an event stream; returns what goes to the client now: each
    /// event that ended in them, byte for byte, but each copy of the response, rewritten.
    /// An event the stream has not ended is held: at the stream's end it is dropped, as a
    /// client drops it (HTML §9.2.6: "any pending data must be discarded").
    mutating func stream(_ bytes: [UInt8]) throws(ToolListFilter.Refusal) -> [UInt8] {
        let ended: [EventStreamReader.Event]
        do {
            ended = try events.feed(bytes)
        } catch {
            throw .init(reason: "an event is larger than mcp.max_response_bytes (\(filter.maxBytes) B)")
        }
        return try relay(ended)
    }

    /// The held events, once the PDP has answered: what goes to the client now.
    mutating func release() throws(ToolListFilter.Refusal) -> [UInt8] {
        let events = held
        held = []
        heldBytes = 0
        awaiting = nil
        return try relay(events)
    }

    private mutating func relay(_ ended: [EventStreamReader.Event]) throws(ToolListFilter.Refusal) -> [UInt8] {
        var out: [UInt8] = []
        for (i, event) in ended.enumerated() {
            if awaiting != nil {
                // Behind the event that waits: held too, in order, within the answer's bound.
                heldBytes += event.raw.count
                guard heldBytes <= filter.maxBytes else {
                    throw .init(reason: "the stream sent more than mcp.max_response_bytes while the PDP was asked")
                }
                held.append(event)
                continue
            }
            // An event without data is never dispatched (§9.2.6), nor is empty data a message.
            if let data = event.data, !data.isEmpty, let decisions = filter.decisions, !decisions.isDecided,
                let names = filter.toolNames(in: data)
            {
                awaiting = names
                held = Array(ended[i...])
                heldBytes = held.reduce(0) { $0 + $1.raw.count }
                break
            }
            guard let data = event.data, !data.isEmpty, let rewritten = try filter.filter(message: data) else {
                out += event.raw
                continue
            }
            // The response, as one data line (the serializer escapes every LF and CR) after
            // the event's other fields (its `id` keeps a client's Last-Event-ID right).
            if event.leadingLF { out.append(0x0A) }
            for line in event.fieldLines { out += line + [0x0A] }
            // Its blank line ends as the original's did: after a CR, the LF that may follow
            // (carried by the next event) completes a CRLF instead of making a blank line.
            out += Array("data: ".utf8) + rewritten + [0x0A, event.raw.last == 0x0D ? 0x0D : 0x0A]
        }
        // The LF that completes the last event's CRLF goes now: a client reading CRLF lines
        // waits for it. (Not while events are held: it belongs after the last of them.)
        if awaiting == nil, events.takeLeadingLF() { out.append(0x0A) }
        return out
    }

    /// `text/event-stream` from `text/event-stream; charset=utf-8`: the type and subtype,
    /// lower case (RFC 9110 §8.3.1: case-insensitive).
    static func mediaType(_ value: String) -> String {
        trimmed(value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]).lowercased()
    }

    private static func trimmed(_ s: Substring) -> String {
        var s = s
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
