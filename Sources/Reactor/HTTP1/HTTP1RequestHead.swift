/// A parsed request head (RFC 9112 §3, §5) with what its fields mean for framing and the
/// connection, derived once. Its bytes live in one buffer that `fields` owns; method,
/// target and fields are views into it.
public struct HTTP1RequestHead: Sendable, Equatable, CustomStringConvertible {
    /// The form of the request-target (RFC 9112 §3.2). The parser checks only the form's
    /// shape; whether the gateway serves a form (absolute-form to a reverse proxy, say) is
    /// the gateway's decision.
    public enum TargetForm: Sendable, Equatable {
        /// "/" path ["?" query] — the usual one.
        case origin
        /// scheme ":" … — what clients send to a forward proxy.
        case absolute
        /// host ":" port — only with CONNECT.
        case authority
        /// "*" — only with OPTIONS.
        case asterisk
    }

    /// The method token, case-sensitive (RFC 9110 §9.1).
    public let method: String
    let targetRange: Range<Int>
    public let targetForm: TargetForm
    public let version: HTTP1Version
    /// The header fields in order, names case-preserved. Settable in the module only so
    /// that the engine can move the buffer out (`HTTP1ConnectionHandler.requestHead`).
    public internal(set) var fields: HTTP1Fields
    public let framing: HTTP1Framing
    /// Whether the connection may carry another request after this one (RFC 9112 §9.3).
    public let keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request (RFC 9110 §10.1.1: ignored on 1.0).
    public let expectsContinue: Bool
    /// The Upgrade protocols asked for, when `Connection: upgrade` is present too
    /// (RFC 9110 §7.8). Exposed, not acted on.
    public let upgrade: [String]
    /// A Connection field names options other than close, keep-alive and upgrade.
    public let listsConnectionOptions: Bool

    /// The request-target's bytes as received.
    public var targetBytes: ArraySlice<UInt8> { fields.bytes(targetRange) }
    /// The request-target (always ASCII).
    public var target: String { fields.withBytes { String(decoding: $0[targetRange], as: UTF8.self) } }

    public static func == (a: HTTP1RequestHead, b: HTTP1RequestHead) -> Bool {
        a.method == b.method && a.targetBytes == b.targetBytes && a.targetForm == b.targetForm
            && a.version == b.version && a.fields == b.fields && a.framing == b.framing
            && a.keepAlive == b.keepAlive && a.expectsContinue == b.expectsContinue && a.upgrade == b.upgrade
    }

    public var description: String { "\(method) \(target) \(version) \(fields)" }
}

extension HTTP1RequestHead {
    // Outside the struct so that it hands everything to the memberwise init: one that set
    // the properties one by one made the optimizer build the head twice and copy it (a
    // retain and a release of every reference in it, per request).
    init(
        method: String, targetRange: Range<Int>, targetForm: TargetForm, version: HTTP1Version,
        fields: consuming HTTP1Fields, semantics: borrowing HTTP1HeadFields
    ) {
        let upgrade = semantics.upgradeProtocols(fields)
        self.init(
            method: method, targetRange: targetRange, targetForm: targetForm, version: version, fields: fields,
            framing: semantics.chunked ? .chunked : semantics.contentLength.map { .contentLength($0) } ?? .none,
            keepAlive: semantics.keepAlive(version),
            expectsContinue: version == .http11 && semantics.expectContinue == true, upgrade: upgrade,
            listsConnectionOptions: semantics.connectionOther)
    }
}
