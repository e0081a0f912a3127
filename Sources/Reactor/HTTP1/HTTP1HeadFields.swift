/// What a head's fields say about framing and the connection, read in one pass and checked
/// with the same strictness for requests and responses (RFC 9112 §6, §9).
struct HTTP1HeadFields: Sendable {
    var contentLength: UInt64?
    var chunked = false
    var connectionClose = false
    var connectionKeepAlive = false
    var connectionUpgrade = false
    /// A Connection field lists an option other than close, keep-alive and upgrade (a
    /// field name that is hop-by-hop for this message, RFC 9110 §7.6.1).
    var connectionOther = false
    var hostCount = 0
    /// Every Expect field said 100-continue; nil when there is none.
    var expectContinue: Bool?
    var upgradeIndices: [Int] = []

    /// The combined list of every Transfer-Encoding field must be exactly one token,
    /// `chunked` (any case). A list of other tokens is an unknown coding (501); anything
    /// that is not a list of tokens (quotes, parameters, empty elements) is malformed (400).
    private static func checkTransferEncoding(_ fields: borrowing HTTP1Fields, _ indices: [Int]) throws(HTTP1ParseError)
    {
        var tokens = 0
        var onlyChunked = true
        for i in indices {
            var malformed = false
            fields.withValue(i) { value in
                Self.forEachListElement(value) { element in
                    if element.isEmpty || !element.allSatisfy(HTTP1Bytes.isTchar) { malformed = true }
                    tokens += 1
                    if !HTTP1Bytes.equalsLowercase(element, "chunked") { onlyChunked = false }
                }
            }
            if malformed { throw HTTP1ParseError(.invalidTransferEncoding) }
        }
        guard tokens == 1, onlyChunked else { throw HTTP1ParseError(.unsupportedTransferCoding) }
    }

    /// Content-Length = 1*DIGIT (RFC 9110 §8.6). Strict: no sign, no OWS inside, no comma
    /// list even of equal values (RFC 9112 §6.3 rule 5 allows accepting one; we do not), no
    /// value past UInt64.
    static func parseContentLength(_ value: UnsafeBufferPointer<UInt8>) throws(HTTP1ParseError) -> UInt64 {
        guard !value.isEmpty else { throw HTTP1ParseError(.invalidContentLength) }
        var n: UInt64 = 0
        for b in value {
            guard HTTP1Bytes.isDigit(b) else { throw HTTP1ParseError(.invalidContentLength) }
            let (times10, o1) = n.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(b - 0x30))
            if o1 || o2 { throw HTTP1ParseError(.invalidContentLength) }
            n = sum
        }
        return n
    }

    /// Calls `body` with each element of a #rule list (RFC 9110 §5.6.1), OWS trimmed; empty
    /// elements are passed too (callers that care refuse them).
    static func forEachListElement(_ value: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var start = 0
        while true {
            var end = start
            while end < value.count && value[end] != 0x2C { end += 1 }
            body(HTTP1Bytes.trimmingOWS(UnsafeBufferPointer(rebasing: value[start..<end])))
            guard end < value.count else { return }
            start = end + 1
        }
    }

    /// RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
    func keepAlive(_ version: HTTP1Version) -> Bool {
        if connectionClose { return false }
        return version == .http11 || connectionKeepAlive
    }

    /// The Upgrade tokens when the sender also sent the "upgrade" connection option
    /// (RFC 9110 §7.8); empty otherwise.
    func upgradeProtocols(_ fields: HTTP1Fields) -> [String] {
        guard connectionUpgrade else { return [] }
        var protocols: [String] = []
        for i in upgradeIndices {
            fields.withValue(i) { value in
                Self.forEachListElement(value) { element in
                    if !element.isEmpty { protocols.append(String(decoding: element, as: UTF8.self)) }
                }
            }
        }
        return protocols
    }
}

extension HTTP1HeadFields {
    /// Checks, in this order (so each refusal has one code): Transfer-Encoding on HTTP/1.0,
    /// Content-Length with Transfer-Encoding, the Transfer-Encoding list, Content-Length.
    ///
    /// Read into locals and handed to the memberwise init (hence an extension): an init
    /// that set the properties as it went was built twice and copied by the optimizer.
    init(_ fields: borrowing HTTP1Fields, version: HTTP1Version) throws(HTTP1ParseError) {
        var contentLengthIndex: Int?
        var transferEncodingIndices: [Int] = []
        var connectionClose = false
        var connectionKeepAlive = false
        var connectionUpgrade = false
        var connectionOther = false
        var hostCount = 0
        var expectContinue: Bool?
        var upgradeIndices: [Int] = []
        try fields.withBytesAndSpans { (all, spans) throws(HTTP1ParseError) in
            for i in 0..<spans.count {
                // The names that matter differ in length: one comparison at most per field.
                let span = spans[i]
                let name = UnsafeBufferPointer(rebasing: all[span.nameStart..<span.nameEnd])
                let value = UnsafeBufferPointer(rebasing: all[span.valueStart..<span.valueEnd])
                switch name.count {
                case 14 where HTTP1Bytes.equalsLowercase(name, "content-length"):
                    if contentLengthIndex != nil { throw HTTP1ParseError(.multipleContentLength) }
                    contentLengthIndex = i
                case 17 where HTTP1Bytes.equalsLowercase(name, "transfer-encoding"):
                    transferEncodingIndices.append(i)
                case 4 where HTTP1Bytes.equalsLowercase(name, "host"):
                    hostCount += 1
                case 10 where HTTP1Bytes.equalsLowercase(name, "connection"):
                    Self.forEachListElement(value) { token in
                        if HTTP1Bytes.equalsLowercase(token, "close") {
                            connectionClose = true
                        } else if HTTP1Bytes.equalsLowercase(token, "keep-alive") {
                            connectionKeepAlive = true
                        } else if HTTP1Bytes.equalsLowercase(token, "upgrade") {
                            connectionUpgrade = true
                        } else if !token.isEmpty {
                            connectionOther = true
                        }
                    }
                case 6 where HTTP1Bytes.equalsLowercase(name, "expect"):
                    let isContinue = HTTP1Bytes.equalsLowercase(value, "100-continue")
                    expectContinue = (expectContinue ?? true) && isContinue
                case 7 where HTTP1Bytes.equalsLowercase(name, "upgrade"):
                    upgradeIndices.append(i)
                default:
                    break
                }
            }
        }
        var chunked = false
        if !transferEncodingIndices.isEmpty {
            // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
            if version == .http10 { throw HTTP1ParseError(.transferEncodingOnHTTP10) }
            // RFC 9112 §6.1: "A server MAY reject a request that contains both Content-Length
            // and Transfer-Encoding" — the classic smuggling pair; we always do.
            if contentLengthIndex != nil { throw HTTP1ParseError(.contentLengthWithTransferEncoding) }
            try Self.checkTransferEncoding(fields, transferEncodingIndices)
            chunked = true
        }
        var contentLength: UInt64?
        if let contentLengthIndex {
            contentLength = try fields.withValue(contentLengthIndex) { value throws(HTTP1ParseError) in
                try Self.parseContentLength(value)
            }
        }
        self.init(
            contentLength: contentLength, chunked: chunked, connectionClose: connectionClose,
            connectionKeepAlive: connectionKeepAlive, connectionUpgrade: connectionUpgrade,
            connectionOther: connectionOther, hostCount: hostCount, expectContinue: expectContinue,
            upgradeIndices: upgradeIndices)
    }
}
