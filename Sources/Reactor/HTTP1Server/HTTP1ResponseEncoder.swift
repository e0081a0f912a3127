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

    /// Appends the head to `buffer` (written in place, no intermediate array), with
    /// `Content-Length: contentLength` if given, else `Transfer-Encoding: chunked` if
    /// `chunked`, else no framing field.
    static func appendHead(
        _ head: HTTPResponseHead, contentLength: UInt64?, chunked: Bool,
        persistence: Persistence, date: [UInt8], to buffer: ByteQueue
    ) {
        // Status line ≤ 32 + reason; each field ≤ its bytes + ": " + CRLF; the framing and
        // connection lines ≤ 64; the empty line.
        let bound =
            32 + reasonBound(head) + fieldsBound(head) + date.count + 64 + 2
        HTTP1HeadWriter.append(to: buffer, capacity: bound) { out in
            statusLine(head, into: &out)
            var hasDate = false
            forEachField(head) { name, value in
                switch classify(name) {
                case .framing: return
                case .date: hasDate = true
                case .other: break
                }
                out.writeField(name, value)
            }
            if !hasDate { date.withUnsafeBufferPointer { out.write($0) } }
            if let contentLength {
                out.write("Content-Length: ")
                out.writeDecimal(contentLength)
                out.write("\r\n")
            } else if chunked {
                out.write("Transfer-Encoding: chunked\r\n")
            }
            switch persistence {
            case .keepAliveDefault: break
            case .keepAlive: out.write("Connection: keep-alive\r\n")
            case .close: out.write("Connection: close\r\n")
            }
            out.write("\r\n")
        }
    }

    /// An interim (1xx) head: status line and fields only.
    static func interim(_ head: HTTPResponseHead) -> [UInt8] {
        let bound = 32 + reasonBound(head) + fieldsBound(head) + 2
        return HTTP1HeadWriter.bytes(capacity: bound) { out in
            statusLine(head, into: &out)
            forEachField(head) { name, value in
                if case .other = classify(name) { out.writeField(name, value) }
            }
            out.write("\r\n")
        }
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

    /// The value of a single, well-formed `Content-Length` field in the head (its own
    /// fields and those it passes on), if any.
    static func contentLength(_ head: HTTPResponseHead) -> UInt64? {
        var found: (fields: HTTP1Fields, index: Int)?
        var count = 0
        // `nameEquals` turns most names away on their length alone.
        if let forwarded = head.forwarded {
            for i in forwarded.fields.indices
            where !forwarded.isDropped(i) && forwarded.fields.nameEquals(i, "content-length") {
                count += 1
                found = (forwarded.fields, i)
            }
        }
        for i in head.fields.indices where head.fields.nameEquals(i, "content-length") {
            count += 1
            found = (head.fields, i)
        }
        guard count == 1, let found else { return nil }
        return found.fields.withValue(found.index) { try? HTTP1HeadFields.parseContentLength($0) }
    }

    /// Each field of the head in order: those it passes on, then its own.
    private static func forEachField(
        _ head: HTTPResponseHead, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void
    ) {
        head.forwarded?.forEachField { _, name, value in body(name, value) }
        head.fields.forEachFieldBuffer(body)
        if let (name, value) = head.lastField {
            var value = value
            name.withUTF8Buffer { name in value.withUTF8 { body(name, $0) } }
        }
    }

    /// The most bytes the head's fields take as field lines, CRLFs and ": " aside.
    private static func fieldsBound(_ head: HTTPResponseHead) -> Int {
        let forwarded = head.forwarded.map { $0.fields.byteCount + 4 * $0.fields.count } ?? 0
        let last = head.lastField.map { $0.name.utf8CodeUnitCount + $0.value.utf8.count + 4 } ?? 0
        return forwarded + head.fields.byteCount + 4 * head.fields.count + last
    }

    /// The chunk-size line of a chunk of `count` bytes (RFC 9112 §7.1).
    static func chunkLine(_ count: Int) -> String { String(count, radix: 16) + "\r\n" }

    private static func statusLine(_ head: HTTPResponseHead, into out: inout HTTP1HeadWriter) {
        out.write("HTTP/1.1 ")
        out.writeDecimal(UInt64(clamping: max(0, head.status)))
        out.write(byte: 0x20)
        // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text ) (RFC 9112 §4): a given reason
        // with anything else (CR, LF) is not sent.
        if let reason = head.reason, reason.utf8.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) {
            out.write(reason)
        } else {
            HTTPStatus.standardReason(head.status).withUTF8Buffer { out.write($0) }
        }
        out.write("\r\n")
    }

    /// The most bytes `statusLine` writes for the reason phrase.
    private static func reasonBound(_ head: HTTPResponseHead) -> Int {
        max(head.reason?.utf8.count ?? 0, HTTPStatus.standardReason(head.status).utf8CodeUnitCount)
    }

    private enum FieldKind { case framing, date, other }

    /// The fields the engine writes itself (RFC 9112 §6, §9.6; Keep-Alive and
    /// Proxy-Connection are hop-by-hop by RFC 9110 §7.6.1) and `Date`.
    private static func classify(_ name: UnsafeBufferPointer<UInt8>) -> FieldKind {
        switch name.count {
        case 4 where HTTP1Bytes.equalsLowercase(name, "date"): return .date
        case 10 where HTTP1Bytes.equalsLowercase(name, "connection"),
            10 where HTTP1Bytes.equalsLowercase(name, "keep-alive"),
            14 where HTTP1Bytes.equalsLowercase(name, "content-length"),
            16 where HTTP1Bytes.equalsLowercase(name, "proxy-connection"),
            17 where HTTP1Bytes.equalsLowercase(name, "transfer-encoding"):
            return .framing
        default: return .other
        }
    }
}
