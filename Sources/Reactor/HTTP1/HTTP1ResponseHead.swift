/// A parsed response head (RFC 9112 §4, §5) and its framing, derived with the request method
/// the response answers (RFC 9112 §6.3).
public struct HTTP1ResponseHead: Sendable, Equatable, CustomStringConvertible {
    public let version: HTTP1Version
    /// 100…599 (RFC 9110 §15).
    public let status: Int
    let reasonRange: Range<Int>
    /// The header fields in order, names case-preserved.
    public let fields: HTTP1Fields
    public let framing: HTTP1Framing
    /// Whether the connection may carry another exchange after this response (RFC 9112 §9.3;
    /// never after a close-delimited body or a 101).
    public let keepAlive: Bool
    /// A Connection field names options other than close, keep-alive and upgrade.
    public let listsConnectionOptions: Bool

    /// The reason-phrase bytes (possibly empty; RFC 9112 §4: a client SHOULD ignore it).
    public var reasonBytes: ArraySlice<UInt8> { fields.bytes(reasonRange) }
    public var reason: String { fields.withBytes { String(decoding: $0[reasonRange], as: UTF8.self) } }

    /// The reason phrase, or nil when it is the standard one for the status.
    var nonstandardReason: String? {
        let same = HTTPStatus.standardReason(status).withUTF8Buffer { standard in
            fields.withBytes { all in standard.elementsEqual(all[reasonRange]) }
        }
        return same ? nil : reason
    }

    // No init of its own: the memberwise one builds the head in place, where one setting the
    // properties one by one was built twice and copied (a retain and release per head).

    public static func == (a: HTTP1ResponseHead, b: HTTP1ResponseHead) -> Bool {
        a.version == b.version && a.status == b.status && a.reasonBytes == b.reasonBytes && a.fields == b.fields
            && a.framing == b.framing && a.keepAlive == b.keepAlive
    }

    public var description: String { "\(version) \(status) \(reason) \(fields)" }
}
