internal import CEvent

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

    /// Appends `METHOD target HTTP/1.1`, the fields and the framing field to `buffer`, in
    /// one evbuffer_add. The fields' own Content-Length and Transfer-Encoding are left out:
    /// framing is this call's, derived from the body (a stale copy would smuggle).
    /// `target` and the fields are the caller's, from a strictly parsed request or from
    /// config (`HTTP1Fields.isValid`). `expectContinue`: the call waits for the upstream's
    /// 100 before the body, and says so (RFC 9110 §10.1.1); the fields' own Expect never goes.
    func writeHead(to buffer: OpaquePointer, expectContinue: Bool = false) {
        var out: [UInt8] = []
        out.reserveCapacity(fields.storage.count + fields.count * 4 + target.utf8.count + 64)
        out.append(contentsOf: method.rawValue.utf8)
        out.append(0x20)
        out.append(contentsOf: target.utf8)
        out.append(contentsOf: " HTTP/1.1\r\n".utf8)
        for i in fields.indices
        where !fields.nameEquals(i, "content-length") && !fields.nameEquals(i, "transfer-encoding")
            && !fields.nameEquals(i, "expect")
        {
            let span = fields.spans[i]
            out.append(contentsOf: fields.storage[span.nameStart..<span.nameEnd])
            out.append(0x3A)
            out.append(0x20)
            out.append(contentsOf: fields.storage[span.valueStart..<span.valueEnd])
            out.append(0x0D)
            out.append(0x0A)
        }
        if expectContinue && bodyFraming != .none { out.append(contentsOf: "Expect: 100-continue\r\n".utf8) }
        switch bodyFraming {
        case .contentLength(let n): out.append(contentsOf: "Content-Length: \(n)\r\n".utf8)
        case .chunked: out.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        case .none:
            // RFC 9110 §8.6: a user agent SHOULD send Content-Length in a request when the
            // method defines a meaning for enclosed content and none is sent.
            if method == .POST || method == .PUT || method == .PATCH {
                out.append(contentsOf: "Content-Length: 0\r\n".utf8)
            }
        }
        out.append(0x0D)
        out.append(0x0A)
        _ = out.withUnsafeBytes { evbuffer_add(buffer, $0.baseAddress, $0.count) }
    }
}

extension UpstreamBodyFraming {
    /// Appends `chunk-size CRLF` of one chunk (RFC 9112 §7.1).
    static func writeChunkLine(_ size: Int, to buffer: OpaquePointer) {
        var line = String(size, radix: 16)
        line += "\r\n"
        line.withUTF8 { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
    }

    /// Appends fixed framing bytes (a chunk's CRLF, the last chunk).
    static func write(_ text: StaticString, to buffer: OpaquePointer) {
        _ = evbuffer_add(buffer, text.utf8Start, text.utf8CodeUnitCount)
    }
}
