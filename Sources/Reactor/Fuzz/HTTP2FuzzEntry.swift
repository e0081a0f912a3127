/// Entry point for fuzzing the HTTP/2 frame input (the libFuzzer target `H2Fuzz` in `fuzz/`
/// and the corpus replay test call it): the client's bytes go through the real
/// `HTTP2ConnectionHandler` (nghttp2's `mem_recv` and tokengate's callbacks) on a connection
/// with no socket, to a gateway in this process that answers each stream in one of four
/// ways (`Answer`). Returns normally on every input; a failed `fuzzInvariant` is a finding.
///
/// Fed whole, then cut at two points taken from the input: every head reaches the gateway whole, with no connection-specific field and
/// within the header limits, while the open exchanges stay within the connection's
/// maximum; a stream the gateway got in two feedings got the same head in both; the streams
/// it got differ between feedings only where the timing of a read may decide (a stream the
/// client reset, or one the server reset or refused, a connection error, the exchange
/// limit reached); what the server wrote is whole, well-ordered frames
/// (`checkOutput`); once the connection closes, every exchange is answered and none counts
/// as open.
public enum HTTP2FuzzEntry {
    /// The first byte: bit 0, the client preface is prepended (else the input must carry
    /// it); bit 1, small limits (256 bytes of header, 100 of body); bits 2-3, which `Answer`
    /// stream 1 gets (the next stream the next one, and so on); bit 4, the server sends a
    /// GOAWAY after the first read; bit 5, every stream gets stream 1's answer. The rest is
    /// the client's bytes.
    public static func all(_ data: [UInt8]) {
        guard let flags = data.first else { return }
        let input = flags & 1 != 0 ? ProtocolSelector.preface + data.dropFirst() : Array(data.dropFirst())
        var options = HTTPServerOptions()
        if flags & 2 != 0 {
            options.maxHeaderSize = 256
            options.maxBodySize = 100
        }
        let client = ClientFrames(input)
        let plan = Plan(
            options: options, answers: (flags >> 2) & 3, sameAnswer: flags & 32 != 0, goAway: flags & 16 != 0)
        let whole = run(input, splits: [], plan, client)
        for splits in splitPlans(input) {
            let split = run(input, splits: splits, plan, client)
            compare(whole, split, plan, client)
        }
    }

    /// Two cut points taken from the input (its middle and last bytes), anywhere in what is
    /// fed (the preface included): one feeding besides the whole, since a connection with its
    /// nghttp2 session costs far more than a parser (byte-at-a-time feeding is left to the
    /// unit tests of each finding).
    static func splitPlans(_ input: [UInt8]) -> [[Int]] {
        guard input.count > 1 else { return [] }
        let a = Int(input[input.count / 2]) * input.count / 256
        let b = Int(input[input.count - 1]) * input.count / 256
        let cuts = [min(a, b), max(a, b)].filter { $0 > 0 && $0 < input.count }
        return cuts.isEmpty ? [] : [cuts]
    }

    struct Plan {
        var options: HTTPServerOptions
        var answers: UInt8
        var sameAnswer = false
        var goAway: Bool
    }

    /// What one feeding gave.
    struct Outcome {
        var heads: [UInt32: Head]
        /// The server reset or refused these streams (RST_STREAM), and ended the connection
        /// with an error (a GOAWAY with a code other than NO_ERROR).
        var serverReset: Set<UInt32> = []
        var connectionError = false
        var reachedMaxExchanges: Bool
    }

    static func run(_ input: [UInt8], splits: [Int], _ plan: Plan, _ client: ClientFrames) -> Outcome {
        var gateway: Gateway?
        let context = ServerContext(options: plan.options) { exchange in
            guard let gateway, let stream = exchange.body as? HTTP2Stream else {
                fuzzInvariant(false, "an exchange that is not an HTTP/2 stream's")
                return
            }
            gateway.exchange(exchange, stream: UInt32(bitPattern: stream.id))
        }
        let served = Gateway(
            answers: plan.answers, sameAnswer: plan.sameAnswer, options: plan.options, limits: context.limits)
        gateway = served
        defer { gateway = nil }
        guard let connection = HTTP2FuzzConnection(context: context) else {
            return Outcome(heads: [:], reachedMaxExchanges: false)
        }
        served.handler = connection.handler
        for (i, chunk) in HTTP1FuzzEntry.chunks(input, splits).enumerated() {
            connection.feed(chunk)
            if i == 0 && plan.goAway && !connection.connection.isClosed {
                connection.handler.goAway()
                connection.runTurn()
            }
        }
        let frames = checkOutput(connection.written, client: client)
        connection.close()
        served.endHeld()
        var outcome = Outcome(heads: served.heads, reachedMaxExchanges: served.reachedMaxExchanges)
        for frame in frames {
            if frame.type == FrameType.rstStream { outcome.serverReset.insert(frame.stream) }
            if frame.type == FrameType.goAway, let code = uint32(frame.payload, at: 4), code != 0 {
                outcome.connectionError = true
            }
        }
        return outcome
    }

    /// The same streams with the same heads, but where timing may decide.
    static func compare(_ whole: Outcome, _ split: Outcome, _ plan: Plan, _ client: ClientFrames) {
        for (stream, head) in whole.heads {
            if let other = split.heads[stream] {
                fuzzInvariant(head == other, "split feeding: stream \(stream) reached the gateway with another head")
            }
        }
        guard !plan.goAway, !whole.connectionError, !split.connectionError, !whole.reachedMaxExchanges,
            !split.reachedMaxExchanges
        else { return }
        let differ = Set(whole.heads.keys).symmetricDifference(split.heads.keys)
        for stream in differ where !client.reset.contains(stream) {
            fuzzInvariant(
                whole.serverReset.contains(stream) || split.serverReset.contains(stream),
                "split feeding: stream \(stream) reached the gateway in one feeding only")
        }
    }
}
