import Foundation

/// Entry point for fuzzing the ext_authz messages (the libFuzzer target `ExtAuthzFuzz` in
/// `fuzz/` and the corpus replay test call it). Returns normally on every input; a failed
/// invariant traps with its message, in a release build too.
///
/// The input is a CheckRequest's bytes. Refused or not, reading never traps. What is
/// accepted has a token method, an http(s) scheme, a host and a path without a space or a
/// control character, and fields with lower-case token names (no pseudo-header, no field of
/// a connection's framing) and values without a control character, within the limits; written again as a CheckRequest (raw
/// headers, in order, its body as it was kept) it reads back to the same attributes; and a CheckResponse made of it,
/// allowed or denied, reads back with every field as given.
public enum ExtAuthzFuzzEntry {
    static let limits = CheckRequestReader.Limits(maxFields: 64, maxFieldBytes: 8192, maxBodyBytes: 256)

    public static func all(_ data: [UInt8]) {
        guard case .success(let a) = CheckRequestReader.read(data, limits: limits) else { return }
        check(a)
        // A body past the limit was not kept, so it is not written again.
        var expected = a
        expected.bodyPastLimit = false
        let again = CheckRequestReader.read(rewritten(a), limits: limits)
        invariant(again == .success(expected), "a request read, written again and read differs: \(again)")
        checkResponses(a)
    }

    private static func check(_ a: CheckAttributes) {
        invariant(CheckRequestReader.isToken(a.method), "method \(a.method)")
        invariant(a.scheme == "http" || a.scheme == "https", "scheme \(a.scheme)")
        invariant(!a.host.isEmpty && CheckRequestReader.isFieldValue(a.host), "host \(a.host.debugDescription)")
        invariant(
            !a.path.isEmpty && CheckRequestReader.isFieldValue(a.path) && !a.path.contains(" "),
            "path \(a.path.debugDescription)")
        invariant(a.fields.count <= limits.maxFields, "\(a.fields.count) fields")
        // A body is kept whole within the limit, or not at all; text and cut say of a kept one.
        invariant(a.body.map { !$0.isEmpty && $0.count <= limits.maxBodyBytes } ?? true, "body size")
        invariant(a.body != nil || (!a.bodyIsText && !a.bodyCut), "a body's marks without a body")
        invariant(!(a.bodyPastLimit && a.body != nil), "a body past the limit kept")
        for f in a.fields {
            invariant(
                CheckRequestReader.isToken(f.name) && !f.name.hasPrefix(":") && f.name == f.name.lowercased(),
                "field name \(f.name.debugDescription)")
            invariant(CheckRequestReader.isFieldValue(f.value), "field value \(f.value.debugDescription)")
            invariant(!CheckRequestReader.connectionFields.contains(f.name), "a connection field \(f.name)")
        }
    }

    /// The attributes as a CheckRequest with raw headers (the fields in order).
    private static func rewritten(_ a: CheckAttributes) -> [UInt8] {
        var http = Envoy_Service_Auth_V3_AttributeContext.HttpRequest()
        http.method = a.method
        http.scheme = a.scheme
        http.host = a.host
        http.path = a.path
        http.id = a.requestID ?? ""
        if let body = a.body {
            if a.bodyIsText { http.body = Data(body) } else { http.rawBody = Data(body) }
            // Cut: the request's size said more than came.
            if a.bodyCut { http.size = Int64(body.count) + 1 }
        }
        http.headerMap.headers = a.fields.map {
            var h = Envoy_Config_Core_V3_HeaderValue()
            h.key = $0.name
            h.value = $0.value
            return h
        }
        var message = Envoy_Service_Auth_V3_CheckRequest()
        message.attributes.request.http = http
        if let source = a.sourceAddress {
            var socket = Envoy_Config_Core_V3_SocketAddress()
            socket.address = source
            message.attributes.source.address.socketAddress = socket
        }
        do {
            return try message.serializedBytes()
        } catch {
            fatalError("a CheckRequest did not serialize: \(error)")
        }
    }

    private static func checkResponses(_ a: CheckAttributes) {
        let pairs = a.fields.map { (name: $0.name, value: $0.value) }
        let allowed = try? Envoy_Service_Auth_V3_CheckResponse(
            serializedBytes: CheckResponseWriter.allowed(set: pairs, remove: [a.host], responseFields: pairs))
        guard case .okResponse(let ok)? = allowed?.httpResponse else {
            invariant(false, "an allowed answer does not read back as one")
            return
        }
        invariant(ok.headers.map { Pair($0.header.key, $0.header.value) } == pairs.map(Pair.init), "allowed: set")
        invariant(ok.headersToRemove == [a.host], "allowed: remove")
        invariant(ok.responseHeadersToAdd.count == pairs.count, "allowed: response fields")
        let denied = try? Envoy_Service_Auth_V3_CheckResponse(
            serializedBytes: CheckResponseWriter.denied(
                .unauthenticated, message: a.path, httpStatus: 401, fields: pairs, body: a.host))
        guard case .deniedResponse(let d)? = denied?.httpResponse else {
            invariant(false, "a denied answer does not read back as one")
            return
        }
        invariant(denied?.status.code == 16 && denied?.status.message == a.path, "denied: status")
        invariant(d.status.code == 401 && d.body == a.host, "denied: the client's answer")
        invariant(d.headers.map { Pair($0.header.key, $0.header.value) } == pairs.map(Pair.init), "denied: fields")
    }

    private struct Pair: Equatable {
        let name: String
        let value: String
        init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
        init(_ pair: (name: String, value: String)) { self.init(pair.name, pair.value) }
    }

    /// As `precondition`, but the message survives a release build (the fuzzer's log names it).
    @inline(__always)
    private static func invariant(_ holds: Bool, _ message: @autoclosure () -> String) {
        if !holds { fatalError("ExtAuthzFuzz: " + message()) }
    }
}
