/// How a request body goes on the wire to the upstream (RFC 9112 §6).
enum UpstreamBodyFraming: Equatable {
    /// No body; `Content-Length: 0` for methods that are expected to carry one.
    case none
    case contentLength(UInt64)
    case chunked
}

extension UpstreamCall.Request {
    var bodyFraming: UpstreamBodyFraming {
        switch body?.framing {
        case .length(let n)?: return .contentLength(n)
        case .streamed?: return .chunked
        case .none?, nil: return .none
        }
    }

    /// Appends `METHOD target HTTP/1.1`, the fields and the framing field to `buffer`,
    /// written in place in its free space. The fields' own Content-Length and Transfer-Encoding are left out:
    /// framing is this call's, derived from the body (a stale copy would smuggle).
    /// `target` and the fields are the caller's, from a strictly parsed request or from
    /// config (`HTTP1Fields.isValid`). `expectContinue`: the call waits for the upstream's
    /// 100 before the body, and says so (RFC 9110 §10.1.1); the fields' own Expect never goes.
    func writeHead(to buffer: ByteQueue, expectContinue: Bool = false) {
        // Request line ≤ method + target + 12; each field ≤ its bytes + ": " + CRLF; the
        // Expect and framing lines ≤ 24 + 48; the empty line. Written straight into the
        // output buffer.
        let forwardedBound = forwarded.map { $0.fields.byteCount + 4 * $0.fields.count } ?? 0
        let bound =
            method.rawValue.utf8.count + target.utf8.count + 12 + forwardedBound + fields.byteCount + 4 * fields.count
            + 24 + 48 + 2
        HTTP1HeadWriter.append(to: buffer, capacity: bound) { out in
            out.write(method.rawValue)
            out.write(byte: 0x20)
            out.write(target)
            out.write(" HTTP/1.1\r\n")
            forwarded?.forEachField { _, name, value in
                if !Self.isFraming(name) { out.writeField(name, value) }
            }
            fields.forEachFieldBuffer { name, value in
                if !Self.isFraming(name) { out.writeField(name, value) }
            }
            if expectContinue && bodyFraming != .none { out.write("Expect: 100-continue\r\n") }
            switch bodyFraming {
            case .contentLength(let n):
                out.write("Content-Length: ")
                out.writeDecimal(n)
                out.write("\r\n")
            case .chunked: out.write("Transfer-Encoding: chunked\r\n")
            case .none:
                // RFC 9110 §8.6: a user agent SHOULD send Content-Length in a request when the
                // method defines a meaning for enclosed content and none is sent.
                if method == .POST || method == .PUT || method == .PATCH { out.write("Content-Length: 0\r\n") }
            }
            out.write("\r\n")
        }
    }
}

extension UpstreamCall.Request {
    /// Fields the call writes itself, whatever a request's fields say: its framing, and
    /// `Expect` (sent only when the call waits for a 100).
    fileprivate static func isFraming(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        switch name.count {
        case 6: HTTP1Bytes.equalsLowercase(name, "expect")
        case 14: HTTP1Bytes.equalsLowercase(name, "content-length")
        case 17: HTTP1Bytes.equalsLowercase(name, "transfer-encoding")
        default: false
        }
    }
}

extension UpstreamBodyFraming {
    /// Appends `chunk-size CRLF` of one chunk (RFC 9112 §7.1).
    static func writeChunkLine(_ size: Int, to buffer: ByteQueue) {
        var line = String(size, radix: 16)
        line += "\r\n"
        buffer.append(line)
    }

    /// Appends fixed framing bytes (a chunk's CRLF, the last chunk).
    static func write(_ text: StaticString, to buffer: ByteQueue) {
        buffer.append(text)
    }

    /// Appends a trailer section's field lines (RFC 9112 §7.1.2), from a strictly parsed
    /// section (no CR, LF or NUL in them).
    static func write(fields: HTTP1Fields, to buffer: ByteQueue) {
        HTTP1HeadWriter.append(to: buffer, capacity: fields.byteCount + 4 * fields.count) { out in
            fields.forEachFieldBuffer { name, value in out.writeField(name, value) }
        }
    }
}
