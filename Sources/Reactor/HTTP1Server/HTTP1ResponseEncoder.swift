/// Serializes response heads for HTTP/1.1 clients (RFC 9112 §4): always `HTTP/1.1` on the
/// status line whatever the request's version (RFC 9110 §6.2: a server sends its own
/// version), the engine's own framing and connection fields in place of any the head
/// carries, and a `Date` unless the head has one (a proxied origin's).
enum HTTP1ResponseEncoder {
    /// What the `Connection` field says.
    enum Persistence {
        /// HTTP/1.1 default: nothing to say.
        case keepAliveDefault
        /// `Connection: keep-alive`: an HTTP/1.0 client asked for it (RFC 9112 §9.3).
        case keepAlive
        case close
    }

    /// The head's bytes with `Content-Length: contentLength` if given, else
    /// `Transfer-Encoding: chunked` if `chunked`, else no framing field.
    static func head(
        _ head: HTTPResponseHead, contentLength: UInt64?, chunked: Bool,
        persistence: Persistence, date: [UInt8]
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + head.fields.storage.count + 8 * head.fields.count)
        statusLine(head, into: &out)
        var hasDate = false
        head.fields.forEachField { name, value in
            switch classify(name) {
            case .framing: return
            case .date: hasDate = true
            case .other: break
            }
            out.append(contentsOf: name)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value)
            out.append(contentsOf: "\r\n".utf8)
        }
        if !hasDate { out.append(contentsOf: date) }
        if let contentLength {
            out.append(contentsOf: "Content-Length: \(contentLength)\r\n".utf8)
        } else if chunked {
            out.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        }
        switch persistence {
        case .keepAliveDefault: break
        case .keepAlive: out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        case .close: out.append(contentsOf: "Connection: close\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        return out
    }

    /// An interim (1xx) head: status line and fields only.
    static func interim(_ head: HTTPResponseHead) -> [UInt8] {
        var out: [UInt8] = []
        statusLine(head, into: &out)
        head.fields.forEachField { name, value in
            if case .other = classify(name) {
                out.append(contentsOf: name)
                out.append(contentsOf: ": ".utf8)
                out.append(contentsOf: value)
                out.append(contentsOf: "\r\n".utf8)
            }
        }
        out.append(contentsOf: "\r\n".utf8)
        return out
    }

    /// A `101 Switching Protocols` head: status line, the head's fields (its `Upgrade`
    /// among them), `Date`, and `Connection: upgrade` (RFC 9110 §7.8: the sender of
    /// `Upgrade` in a 101 "MUST also send an upgrade connection option").
    static func switchingProtocols(_ head: HTTPResponseHead, date: [UInt8]) -> [UInt8] {
        var out = interim(head)
        out.removeLast(2)
        out.append(contentsOf: date)
        out.append(contentsOf: "Connection: upgrade\r\n\r\n".utf8)
        return out
    }

    /// The value of a single, well-formed `Content-Length` field in `fields`, if any.
    static func contentLength(_ fields: HTTP1Fields) -> UInt64? {
        let values = fields.values("Content-Length")
        guard values.count == 1 else { return nil }
        return try? HTTP1HeadFields.parseContentLength(ArraySlice(values[0].utf8))
    }

    /// The chunk-size line of a chunk of `count` bytes (RFC 9112 §7.1).
    static func chunkLine(_ count: Int) -> String { String(count, radix: 16) + "\r\n" }

    private static func statusLine(_ head: HTTPResponseHead, into out: inout [UInt8]) {
        out.append(contentsOf: "HTTP/1.1 \(head.status) ".utf8)
        // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text ) (RFC 9112 §4): a given reason
        // with anything else (CR, LF) is not sent.
        let reason = head.reason ?? HTTPStatus.reason(head.status)
        if reason.utf8.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) {
            out.append(contentsOf: reason.utf8)
        } else {
            out.append(contentsOf: HTTPStatus.reason(head.status).utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
    }

    private enum FieldKind { case framing, date, other }

    /// The fields the engine writes itself (RFC 9112 §6, §9.6; Keep-Alive and
    /// Proxy-Connection are hop-by-hop by RFC 9110 §7.6.1) and `Date`.
    private static func classify(_ name: UnsafeBufferPointer<UInt8>) -> FieldKind {
        let lowered = name.lazy.map(HTTP1Fields.lower)
        switch name.count {
        case 4 where lowered.elementsEqual("date".utf8): return .date
        case 10 where lowered.elementsEqual("connection".utf8),
            10 where lowered.elementsEqual("keep-alive".utf8),
            14 where lowered.elementsEqual("content-length".utf8),
            16 where lowered.elementsEqual("proxy-connection".utf8),
            17 where lowered.elementsEqual("transfer-encoding".utf8):
            return .framing
        default: return .other
        }
    }
}
