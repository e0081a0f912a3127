/// A request that is a gRPC call, told by its `content-type` alone: what a refusal is
/// shaped by (`GRPCTrailersOnly`). Judged only when the gateway refuses a request, never
/// per request, so the other requests pay nothing for it.
///
/// gRPC over HTTP/2 (PROTOCOL-HTTP2.md): "Content-Type → "content-type" "application/grpc"
/// [("+proto" / "+json" / {custom})]". gRPC-Web (PROTOCOL-WEB.md): `application/grpc-web`
/// and, base64 on the wire, `application/grpc-web-text`, each with the same optional
/// `+format`; it also runs over HTTP/1.1. The media type is matched case-insensitively
/// (RFC 9110 §8.3.1) and its parameters are ignored; `application/grpcx` or
/// `application/grpc-webfoo` is no gRPC call and keeps the plain answer.
public enum GRPCCall: Equatable, Sendable {
    case grpc
    /// `text`: the base64 form; `format`: the `+format` suffix, lowercased, if any.
    case grpcWeb(text: Bool, format: String?)

    /// nil when `contentType` is not a gRPC or gRPC-Web media type.
    public init?(contentType: String) {
        var media = ArraySlice(contentType.utf8)
        if let semicolon = media.firstIndex(of: UInt8(ascii: ";")) { media = media[..<semicolon] }
        while let b = media.first, b == 0x20 || b == 0x09 { media = media.dropFirst() }
        while let b = media.last, b == 0x20 || b == 0x09 { media = media.dropLast() }
        var format: String?
        if let plus = media.firstIndex(of: UInt8(ascii: "+")) {
            let suffix = media[(plus + 1)...]
            guard !suffix.isEmpty, suffix.allSatisfy(Self.isRestrictedNameByte) else { return nil }
            format = String(decoding: suffix.map(HTTP1Fields.lower), as: UTF8.self)
            media = media[..<plus]
        }
        if Self.equalsLowercase(media, "application/grpc") {
            self = .grpc
        } else if Self.equalsLowercase(media, "application/grpc-web") {
            self = .grpcWeb(text: false, format: format)
        } else if Self.equalsLowercase(media, "application/grpc-web-text") {
            self = .grpcWeb(text: true, format: format)
        } else {
            return nil
        }
    }

    /// The request's call, if it is one (its first `content-type`). Every request with a
    /// body is asked (`RequestBodyLimit`), and most are no call: their type is turned away on
    /// its bytes in place, and only one that starts as a call's does is read as a string.
    public init?(_ fields: HTTP1Fields) {
        guard let contentType = Self.typeThatMayBeCall(fields) else { return nil }
        self.init(contentType: contentType)
    }

    /// The first `content-type`, when it starts as a call's; nil for none or any other.
    static func typeThatMayBeCall(_ fields: HTTP1Fields) -> String? {
        var first: String?
        var seen = false
        fields.forEachValue(named: "content-type") { value in
            guard !seen else { return }
            seen = true
            if startsAsCall(value) { first = String(decodingUTF8: value) }
        }
        return first
    }

    /// Whether `value`, past leading blanks, starts with `application/grpc` in any case, as
    /// each of the three media types `init(contentType:)` takes does.
    static func startsAsCall(_ value: Span<UInt8>) -> Bool {
        var at = 0
        while at < value.count, value[at] == 0x20 || value[at] == 0x09 { at += 1 }
        let prefix: StaticString = "application/grpc"
        guard value.count - at >= prefix.utf8CodeUnitCount else { return false }
        for i in 0..<prefix.utf8CodeUnitCount where HTTP1Fields.lower(value[at + i]) != prefix.utf8Start[i] {
            return false
        }
        return true
    }

    /// The `content-type` of an answer to this call: gRPC answers `application/grpc` (as
    /// Envoy's local replies do); gRPC-Web echoes the request's type, so a client that
    /// decodes base64 for `-text` knows which body it would have had.
    public var responseContentType: String {
        switch self {
        case .grpc: "application/grpc"
        case .grpcWeb(let text, let format):
            "application/grpc-web" + (text ? "-text" : "") + (format.map { "+" + $0 } ?? "")
        }
    }

    /// RFC 6838 §4.2 restricted-name characters but `+`: the only ones a `+format` suffix
    /// may hold, so an echoed suffix is a plain token, never a second suffix or a field's
    /// other bytes.
    private static func isRestrictedNameByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "-"),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default: false
        }
    }

    private static func equalsLowercase(_ bytes: ArraySlice<UInt8>, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        var i = 0
        for b in bytes {
            guard HTTP1Fields.lower(b) == lower.utf8Start[i] else { return false }
            i += 1
        }
        return true
    }
}
