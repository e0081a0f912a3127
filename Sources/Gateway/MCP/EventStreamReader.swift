/// Reads a `text/event-stream` (WHATWG HTML §9.2.6, "Interpreting an event stream") as it
/// arrives, in pieces cut anywhere, and hands back each event whole: its exact bytes, so the
/// gateway can pass on byte for byte what it need not change, and its data, so it can tell
/// the one event it must. Pure, byte-fed, resumable; no I/O. Only `data` is kept of the
/// fields: the gateway decides by the JSON-RPC message an event carries, not by its type.
struct EventStreamReader {
    /// One event as the stream carried it.
    struct Event: Equatable {
        /// Its bytes, from the end of the event before it to its ending blank line.
        var raw: [UInt8]
        /// Its `data` lines joined with LF (§9.2.6: "append the field value to the data
        /// buffer, then append a single U+000A LINE FEED"; the last LF is removed on
        /// dispatch); nil when it has no `data` field (§9.2.6: such an event is not
        /// dispatched, so nothing a client reads is in it).
        var data: [UInt8]?
        /// Its other field lines (`event`, `id`, `retry`, …) as they came, without their line
        /// ending: what a rewritten event keeps of it.
        var fieldLines: [[UInt8]] = []
        /// `raw` starts with the LF of the CRLF that ended the event before: an event whose
        /// blank line ends in CR at the end of a piece is handed back then (a stream of CR
        /// endings must not wait for the next byte), so that LF, when it comes in the next
        /// piece, is carried by the next event. A rewritten event keeps it.
        var leadingLF = false
    }

    /// An event grew past `maxEventBytes` before its blank line.
    struct TooLarge: Error, Equatable {}

    /// The most one event may hold (its raw bytes) before the stream is refused.
    let maxEventBytes: Int
    private var raw: [UInt8] = []
    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var fieldLines: [[UInt8]] = []
    private var leadingLF = false
    /// An event ended by a CR, held until the next byte says whether an LF belongs to it.
    private var held: Event?
    /// The last byte ended a line with CR: an LF right after it is the same line ending
    /// (§9.2.5: "end-of-line = ( cr lf / cr / lf )"), even when it comes in the next piece.
    private var afterCR = false
    private var firstLine = true

    init(maxEventBytes: Int) {
        self.maxEventBytes = maxEventBytes
    }

    /// Reads `bytes`; returns the events they end, in order. What is left of an event that
    /// has not ended is held for the next call.
    mutating func feed(_ bytes: some Sequence<UInt8>) throws(TooLarge) -> [Event] {
        var events: [Event] = []
        for b in bytes {
            if afterCR {
                afterCR = false
                if b == 0x0A {
                    if var event = held {
                        held = nil
                        event.raw.append(b)
                        events.append(event)
                    } else {
                        raw.append(b)
                        if raw.count == 1 { leadingLF = true }
                    }
                    continue
                }
            }
            if let event = held {
                held = nil
                events.append(event)
            }
            raw.append(b)
            if b == 0x0D || b == 0x0A {
                afterCR = b == 0x0D
                if let event = endLine() {
                    if b == 0x0D { held = event } else { events.append(event) }
                }
                continue
            }
            line.append(b)
            if raw.count > maxEventBytes { throw TooLarge() }
        }
        if let event = held {
            held = nil
            events.append(event)
        }
        return events
    }

    /// Takes out the LF that completes the CRLF of the last event handed back, when it is all
    /// that is pending (`Event.leadingLF`), so that a relay can pass it on now rather than
    /// with the next event, which may never come. True if it did.
    mutating func takeLeadingLF() -> Bool {
        guard leadingLF, raw == [0x0A] else { return false }
        raw.removeAll(keepingCapacity: true)
        leadingLF = false
        return true
    }

    /// The bytes of an event the stream has not ended. §9.2.6: "Once the end of the file is
    /// reached, any pending data must be discarded", so a client never reads them as an event.
    var pending: [UInt8] { raw }

    /// One line ended; the event, if the line was the blank one that ends it.
    private mutating func endLine() -> Event? {
        defer { line.removeAll(keepingCapacity: true) }
        if firstLine {
            firstLine = false
            // §9.2.5: one leading U+FEFF BYTE ORDER MARK of the stream is ignored.
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        guard !line.isEmpty else {
            // A blank line: dispatch the event (§9.2.6).
            let event = Event(
                raw: raw, data: hasData ? Array(data.dropLast()) : nil, fieldLines: fieldLines, leadingLF: leadingLF)
            raw.removeAll(keepingCapacity: true)
            data.removeAll(keepingCapacity: true)
            hasData = false
            fieldLines = []
            leadingLF = false
            return event
        }
        // A line starting with a colon is a comment; otherwise the field name runs to the
        // first colon (or is the whole line), and one space after the colon is dropped.
        guard line[0] != UInt8(ascii: ":") else { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = line[..<(colon ?? line.endIndex)]
        guard name.elementsEqual("data".utf8) else {
            fieldLines.append(line)
            return nil
        }
        var value = colon.map { line[($0 + 1)...] } ?? []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        data.append(contentsOf: value)
        data.append(0x0A)
        hasData = true
        return nil
    }
}
