import Foundation
import Testing

@testable import Gateway

@Suite("Access log lines: fixed field order, valid JSON whatever the bytes")
struct AccessLogLineTests {
    /// 2026-11-25T12:00:10.123Z
    static let noon: Int64 = 1_795_608_010_123

    static func record(path: String = "/orders/7", detail: String? = nil) -> AccessLogRecord {
        AccessLogRecord(
            requestID: "rid-1", method: "GET", path: path, route: "orders", status: 401, bytes: 123,
            durationMicros: 12_345, upstreamMicros: 42, sub: "alice", clientID: "cli", issuer: "https://as.example",
            rejection: "invalid_token", reason: "expired", detail: detail)
    }

    func line(_ r: AccessLogRecord) -> [UInt8] {
        var out = JSONLineBytes()
        AccessLogLine.append(r, to: &out)
        return out.bytes
    }

    func object(_ bytes: [UInt8]) throws -> [String: Any] {
        #expect(bytes.last == UInt8(ascii: "\n"))
        #expect(bytes.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") }, "one line")
        let any = try JSONSerialization.jsonObject(with: Data(bytes))
        return try #require(any as? [String: Any])
    }

    func keys(_ bytes: [UInt8]) -> [String] {
        // The order in the text, which a dictionary does not keep.
        let text = String(decoding: bytes, as: UTF8.self)
        return text.split(separator: ",").compactMap { part in
            let p = part.drop(while: { $0 == "{" })
            guard p.first == "\"", let end = p.dropFirst().firstIndex(of: "\""), p[p.index(after: end)...].first == ":"
            else { return nil }
            return String(p[p.index(after: p.startIndex)..<end])
        }
    }

    @Test func everyFieldInItsDocumentedOrder() throws {
        var out = JSONLineBytes()
        AccessLogLine.append(Self.record(detail: "signature"), to: &out)
        #expect(
            keys(out.bytes) == [
                "ts", "level", "msg", "request_id", "method", "path", "route", "status", "bytes", "duration_ms",
                "upstream_ms", "sub", "client_id", "issuer", "rejection", "reason", "detail"
            ])
        let o = try object(out.bytes)
        #expect(o["msg"] as? String == "access")
        #expect(o["level"] as? String == "info")
        #expect(o["request_id"] as? String == "rid-1")
        #expect(o["method"] as? String == "GET")
        #expect(o["path"] as? String == "/orders/7")
        #expect(o["route"] as? String == "orders")
        #expect(o["status"] as? Int == 401)
        #expect(o["bytes"] as? Int == 123)
        #expect(o["duration_ms"] as? Double == 12.345)
        #expect(o["upstream_ms"] as? Double == 0.042)
        #expect(o["sub"] as? String == "alice")
        #expect(o["client_id"] as? String == "cli")
        #expect(o["issuer"] as? String == "https://as.example")
        #expect(o["rejection"] as? String == "invalid_token")
        #expect(o["reason"] as? String == "expired")
        #expect(o["detail"] as? String == "signature")
    }

    @Test func unknownValuesAreLeftOut() throws {
        var r = Self.record()
        (r.sub, r.clientID, r.issuer, r.rejection, r.reason, r.detail) = (nil, nil, nil, nil, nil, nil)
        let bytes = line(r)
        #expect(
            keys(bytes) == [
                "ts", "level", "msg", "request_id", "method", "path", "route", "status", "bytes", "duration_ms",
                "upstream_ms"
            ])
        _ = try object(bytes)
    }

    @Test func pathParametersComeLastAsAnObjectInTemplateOrder() throws {
        var r = Self.record()
        r.authz = "pdp:allow"
        r.authzMicros = 10
        r.pathParameters = PathParameters([.init(name: "order_id", value: "42"), .init(name: "item", value: "a%20b")])
        let bytes = line(r)
        let k = keys(bytes)
        #expect(k.firstIndex(of: "path_params").map { $0 - 1 } == k.firstIndex(of: "authz_ms"), "\(k)")
        #expect(
            String(decoding: bytes, as: UTF8.self).hasSuffix(
                #","path_params":{"order_id":"42","item":"a%20b"}}"# + "\n"))
        let o = try object(bytes)
        #expect(o["path_params"] as? [String: String] == ["order_id": "42", "item": "a%20b"])
        // None captured: no member.
        #expect(!keys(line(Self.record())).contains("path_params"))
    }

    @Test func tunnelLine() throws {
        var out = JSONLineBytes()
        AccessLogLine.append(
            TunnelLogRecord(
                requestID: "r", route: "ws", path: "/chat", reason: "client_closed", bytesToUpstream: 10,
                bytesToClient: 20, durationMicros: 1_500_000, sub: nil),
            to: &out)
        #expect(
            keys(out.bytes) == [
                "ts", "level", "msg", "request_id", "route", "path", "reason", "bytes_to_upstream", "bytes_to_client",
                "duration_ms"
            ])
        let o = try object(out.bytes)
        #expect(o["msg"] as? String == "tunnel")
        #expect(o["duration_ms"] as? Double == 1500.0)
        #expect(o["bytes_to_client"] as? Int == 20)
    }

    /// A line is written into one reservation: with every string escaped at six bytes a byte
    /// and every number at its longest, it still fits (past it, the write would trap) and
    /// reads back whole.
    @Test func linesAtTheirLongestFitTheirReservation() throws {
        let hostile = String(repeating: "\u{1}", count: 300)
        let r = AccessLogRecord(
            requestID: hostile, method: hostile, path: hostile, route: hostile, status: Int.min, bytes: Int.min,
            durationMicros: Int.max, upstreamMicros: Int.max, sub: hostile, clientID: hostile, issuer: hostile,
            rejection: hostile, reason: hostile, detail: hostile, authz: hostile, authzMicros: Int.max,
            pathParameters: PathParameters((0..<4).map { _ in .init(name: hostile, value: hostile) }),
            mcpMethod: hostile, mcpName: hostile)
        let o = try object(line(r))
        #expect(o["status"] as? Int == Int.min)
        #expect(o["mcp.name"] as? String == hostile)
        #expect(o["detail"] as? String == hostile)
        var out = JSONLineBytes()
        AccessLogLine.append(
            TunnelLogRecord(
                requestID: hostile, route: hostile, path: hostile, reason: hostile, bytesToUpstream: .max,
                bytesToClient: .max, durationMicros: .max, sub: hostile),
            to: &out)
        let t = try object(out.bytes)
        #expect((t["bytes_to_client"] as? NSNumber)?.uint64Value == UInt64.max)
        #expect(t["sub"] as? String == hostile)
    }

    @Test(arguments: [
        "/a\"b", "/a\\b", "/\u{0}\u{1}\u{1f}\u{7f}", "/line\nbreak\r\t", "\"}\n{\"msg\":\"forged",
        "/caf\u{e9}/\u{1F600}", "/\u{2028}"
    ])
    func hostilePathsStayOneStringOfOneLine(path: String) throws {
        let o = try object(line(Self.record(path: path)))
        #expect(o["path"] as? String == path)
        #expect(o["msg"] as? String == "access")
    }

    /// Each byte of no well-formed sequence (overlong forms, surrogates, past U+10FFFF,
    /// stray continuation bytes, truncated sequences) becomes one U+FFFD.
    @Test(
        arguments: [
            ([0xFF], "\u{FFFD}"), ([0xC0, 0xAF], "\u{FFFD}\u{FFFD}"), ([0xE0, 0x80, 0xAF], "\u{FFFD}\u{FFFD}\u{FFFD}"),
            ([0xED, 0xA0, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}"),
            ([0xF4, 0x90, 0x80, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}"),
            ([0xE2, 0x82], "\u{FFFD}\u{FFFD}"), ([0x61, 0x80, 0x62], "a\u{FFFD}b"),
            ([0xF0, 0x9F, 0x98, 0x22], "\u{FFFD}\u{FFFD}\u{FFFD}\"")
        ] as [([UInt8], String)])
    func invalidUTF8BecomesReplacementCharacters(raw: [UInt8], expected: String) throws {
        var out = JSONLineBytes()
        out.raw("{\"v\":")
        out.string(utf8: raw.span)
        out.endLine()
        let o = try object(out.bytes)
        #expect(o["v"] as? String == expected)
    }

    @Test func wellFormedMultibyteIsCopiedAsItIs() {
        var out = JSONLineBytes()
        let raw: [UInt8] = Array("é€😀".utf8)
        out.string(utf8: raw.span)
        #expect(out.bytes == [0x22] + raw + [0x22])
    }

    /// The escape of one byte standing alone, byte by byte as the rules say: what the
    /// eight-bytes-at-a-time scan must give too.
    static func expectedEscape(_ b: UInt8) -> String {
        switch b {
        case 0x22: return "\\\""
        case 0x5C: return "\\\\"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        case 0x80...: return "\\ufffd"
        case 0x20..<0x7F: return String(UnicodeScalar(b))
        default: return "\\u00" + (b < 0x10 ? "0" : "") + String(b, radix: 16)
        }
    }

    /// Every byte value at every offset of a string long enough for the scan's eight-byte
    /// steps: each is found wherever it sits in a word, and the plain bytes around it are
    /// copied as they are.
    @Test func everyByteAtEveryOffsetIsEscapedAsAlone() {
        for b in 0...255 {
            for at in 0..<19 {
                var raw = Array(repeating: UInt8(ascii: "a"), count: 19)
                raw[at] = UInt8(b)
                var out = JSONLineBytes()
                out.string(utf8: raw.span)
                let expected =
                    "\"" + String(repeating: "a", count: at) + Self.expectedEscape(UInt8(b))
                    + String(repeating: "a", count: 18 - at) + "\""
                #expect(String(decoding: out.bytes, as: UTF8.self) == expected, "byte \(b) at \(at)")
            }
        }
    }

    /// Multibyte sequences across the scan's eight-byte steps are copied whole.
    @Test func multibyteAcrossWordsIsCopiedAsItIs() {
        for at in 0..<12 {
            let raw: [UInt8] = Array(String(repeating: "x", count: at).utf8) + Array("é€😀/orders".utf8)
            var out = JSONLineBytes()
            out.string(utf8: raw.span)
            #expect(out.bytes == [0x22] + raw + [0x22], "at \(at)")
        }
    }

    @Test func controlBytesUseShortOrUnicodeEscapes() {
        var out = JSONLineBytes()
        out.string("\u{0}\u{8}\u{9}\u{a}\u{c}\u{d}\u{1b}\u{7f}\"\\")
        #expect(String(decoding: out.bytes, as: UTF8.self) == #""\u0000\b\t\n\f\r\u001b\u007f\"\\""#)
    }

    @Test(arguments: [
        (0, "0"), (7, "7"), (-42, "-42"), (Int.max, "9223372036854775807"), (Int.min, "-9223372036854775808")
    ])
    func integers(value: Int, text: String) {
        var out = JSONLineBytes()
        out.int(value)
        #expect(String(decoding: out.bytes, as: UTF8.self) == text)
    }

    @Test(arguments: [(0, "0.000"), (42, "0.042"), (12_345, "12.345"), (1_000_000, "1000.000"), (-5, "0.000")])
    func milliseconds(micros: Int, text: String) {
        var out = JSONLineBytes()
        out.milliseconds(micros: micros)
        #expect(String(decoding: out.bytes, as: UTF8.self) == text)
    }
}

@Suite("Log timestamps: RFC 3339 UTC with milliseconds, cached per millisecond")
struct LogTimestampTests {
    func text(_ t: inout LogTimestamp, _ ms: Int64) -> String {
        var out: [UInt8] = []
        t.append(unixMillis: ms, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func formatsUTCWithMilliseconds() {
        var t = LogTimestamp()
        #expect(text(&t, 0) == "1970-01-01T00:00:00.000Z")
        #expect(text(&t, AccessLogLineTests.noon) == "2026-11-25T12:00:10.123Z")
        #expect(text(&t, 951_782_400_999) == "2000-02-29T00:00:00.999Z")
    }

    @Test func sameSecondChangesOnlyTheMilliseconds() {
        var t = LogTimestamp()
        let base = AccessLogLineTests.noon
        #expect(text(&t, base) == "2026-11-25T12:00:10.123Z")
        #expect(text(&t, base) == "2026-11-25T12:00:10.123Z")
        #expect(text(&t, base + 7) == "2026-11-25T12:00:10.130Z")
        #expect(text(&t, base + 877) == "2026-11-25T12:00:11.000Z")
        #expect(text(&t, base - 124) == "2026-11-25T12:00:09.999Z")
    }

    @Test func nowLooksLikeATimestamp() {
        var t = LogTimestamp()
        var out: [UInt8] = []
        out.append(addingCapacity: LogTimestamp.length) { t.append(to: &$0) }
        #expect(out.count == LogTimestamp.length)
        #expect(out[10] == UInt8(ascii: "T") && out[23] == UInt8(ascii: "Z"))
    }
}

@Suite("Config: access_log")
struct AccessLogConfigTests {
    let base = """
        listen: 127.0.0.1:8080
        upstreams: { app: { url: "http://127.0.0.1:3000" } }
        routes: [{ match: { path_prefix: / }, upstream: app, auth: none }]

        """

    func parse(_ extra: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: base + extra, environment: [:], baseDirectory: "/etc/tg", cores: 1)
    }

    @Test func onByDefaultToStandardOutputUnbuffered() throws {
        let c = try parse("").get()
        #expect(c.accessLog == .on(AccessLogOutput(destination: .standardOutput, bufferSize: 0, flushInterval: 1)))
        #expect(try parse("access_log: true").get().accessLog == c.accessLog)
        #expect(try parse("access_log: false").get().accessLog == .off)
    }

    @Test func aFileIsBufferedByDefaultAndRelativeToTheConfig() throws {
        let c = try parse("access_log: { path: logs/access.log }").get()
        #expect(
            c.accessLog == .on(AccessLogOutput(destination: .file(path: "/etc/tg/logs/access.log"), bufferSize: 65536)))
        let unbuffered = try parse("access_log: { path: /var/log/a.log, buffer: 0, flush: 250ms }").get()
        #expect(
            unbuffered.accessLog
                == .on(AccessLogOutput(destination: .file(path: "/var/log/a.log"), bufferSize: 0, flushInterval: 0.25)))
        let stdout = try parse("access_log: { buffer: 64KB, flush: 1s }").get()
        #expect(stdout.accessLog == .on(AccessLogOutput(destination: .standardOutput, bufferSize: 65536)))
    }

    @Test func everyProblemNamesItsKey() {
        guard case .failure(let e) = parse("access_log: { path: \"\", buffer: 1TB, flush: 2h, format: json }") else {
            Issue.record("accepted")
            return
        }
        let paths = Set(e.problems.map(\.path))
        #expect(paths == ["access_log.path", "access_log.buffer", "access_log.flush", "access_log.format"])
    }
}
