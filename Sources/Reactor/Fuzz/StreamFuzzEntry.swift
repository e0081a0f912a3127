/// Entry points for fuzzing the byte-fed stream parsers besides HTTP/1.1 (the libFuzzer
/// target `StreamFuzz` in `fuzz/` and the corpus replay test call these): the WebSocket frame
/// tracker of a tunnel (RFC 6455 §5.2), the RESP reply reader of the Redis client and the
/// message counter of a gRPC request body. Each
/// gets the same bytes whole, one byte at a time (up to 64 bytes) and cut at two points
/// taken from the input, and must give the same frames or replies and the same refusal. They
/// return normally on every input; a failed `fuzzInvariant` is a finding.
public enum StreamFuzzEntry {
    /// The first byte chooses the parser (bit 0: WebSocket, or with bit 3 clear RESP, set a
    /// gRPC body) and, for WebSocket, whether masking is required (bit 1) and frames are taken
    /// one at a time (bit 2); for gRPC, the text form (bit 4). The rest is the stream.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let stream = Array(data.dropFirst())
        if first & 1 == 0 {
            webSocket(stream, requireMask: first & 2 != 0, stopAtFrameEnd: first & 4 != 0)
        } else if first & 8 != 0 {
            grpc(stream, text: first & 16 != 0)
        } else {
            resp(stream)
        }
    }

    /// Cut points: every byte for short inputs, and two points taken from the input.
    static func splitPlans(_ data: [UInt8]) -> [[Int]] {
        guard data.count > 1 else { return [] }
        var plans = HTTP1FuzzEntry.splitPlans(data).filter { $0.count < data.count - 1 }
        if data.count <= 64 { plans.append(Array(1..<data.count)) }
        return plans
    }
}
