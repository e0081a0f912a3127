/// The gRPC refusal's view of a fuzzed request head: what a client's `content-type` and a
/// message quoting it can make of the answer's fields.
extension HTTP1FuzzEntry {
    /// - a gRPC call's answer type is a plain token that names the same call again;
    /// - a percent-encoded `grpc-message` holds only 0x20–0x7E and decodes to the text.
    static func checkGRPC(_ fields: HTTP1Fields) {
        guard let contentType = fields.first("content-type") else { return }
        if let call = GRPCCall(contentType: contentType) {
            let answer = call.responseContentType
            fuzzInvariant(answer.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "grpc: answer type not a token")
            fuzzInvariant(GRPCCall(contentType: answer) == call, "grpc: answer type names another call")
        }
        let encoded = Array(GRPCTrailersOnly.percentEncoded(contentType).utf8)
        fuzzInvariant(encoded.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }, "grpc: message byte outside 0x20-0x7E")
        fuzzInvariant(percentDecoded(encoded) == Array(contentType.utf8), "grpc: message does not decode back")
    }

    private static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
                let byte = UInt8(String(decoding: bytes[(i + 1)...(i + 2)], as: UTF8.self), radix: 16)
            {
                out.append(byte)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }
}
