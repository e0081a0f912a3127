/// The fields of a received message that a proxy passes on: all of them, in order, but for
/// those it drops (hop-by-hop fields, identity headers a client may not send, …). Sent as
/// they are, from the received section's own bytes: nothing is copied to filter them.
public struct HTTP1ForwardedFields: Sendable {
    /// The section as received.
    public let fields: HTTP1Fields
    private var dropped = FieldSet()

    /// Leaves out the field at `index` (of `fields`) too.
    public mutating func drop(_ index: Int) { dropped.insert(index) }

    public func isDropped(_ index: Int) -> Bool { dropped.contains(index) }

    /// Calls `body` with the index and value bytes of each field passed on that is named
    /// `name` (ASCII case-insensitive), in order.
    public func forEachValue(named name: String, _ body: (Int, Span<UInt8>) -> Void) {
        fields.forEachMatch(named: name) { i, value in
            if !dropped.contains(i) { body(i, Span(_unsafeElements: value)) }
        }
    }

    /// Calls `body` with the index, name and value bytes of each field passed on, in order.
    func forEachField(_ body: (Int, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        let dropped = dropped
        fields.withBytesAndSpans { all, spans in
            for i in 0..<spans.count where !dropped.contains(i) {
                let s = spans[i]
                body(
                    i, UnsafeBufferPointer(rebasing: all[s.nameStart..<s.nameEnd]),
                    UnsafeBufferPointer(rebasing: all[s.valueStart..<s.valueEnd]))
            }
        }
    }

    /// The fields passed on, as a section of their own (for tests and logs).
    public var passedOn: HTTP1Fields {
        var out = HTTP1Fields()
        forEachField { _, name, value in out.append(name: name, value: value) }
        return out
    }

    /// A set of field indices: a bit each, inline for the first 128 (a request past that
    /// is refused by default limits), in an array beyond.
    struct FieldSet: Sendable {
        private var low: UInt64 = 0
        private var high: UInt64 = 0
        private var more: [UInt64]? = nil

        mutating func insert(_ i: Int) {
            switch i {
            case 0..<64: low |= 1 << UInt64(i)
            case 64..<128: high |= 1 << UInt64(i - 64)
            default:
                let word = (i - 128) / 64
                var words = more ?? []
                while words.count <= word { words.append(0) }
                words[word] |= 1 << UInt64((i - 128) % 64)
                more = words
            }
        }

        func contains(_ i: Int) -> Bool {
            switch i {
            case 0..<64: return low & (1 << UInt64(i)) != 0
            case 64..<128: return high & (1 << UInt64(i - 64)) != 0
            default:
                guard let more else { return false }
                let word = (i - 128) / 64
                return word < more.count && more[word] & (1 << UInt64((i - 128) % 64)) != 0
            }
        }
    }
}

extension HTTP1ForwardedFields {
    /// The fields of `fields` whose name `keep` accepts.
    ///
    /// The fields are walked through their bytes and spans, by closures that capture no field
    /// section (one that did retained its buffer), and the result is handed to the memberwise
    /// init (one setting properties as it went was built twice and copied).
    public init(_ fields: HTTP1Fields, keeping keep: (Span<UInt8>) -> Bool) {
        var dropped = FieldSet()
        fields.withBytesAndSpans { all, spans in
            for i in 0..<spans.count {
                let s = spans[i]
                if !keep(Span(_unsafeElements: all[s.nameStart..<s.nameEnd])) { dropped.insert(i) }
            }
        }
        self.init(fields: fields, dropped: dropped)
    }
}
