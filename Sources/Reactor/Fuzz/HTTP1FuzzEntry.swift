/// Entry points for fuzzing the HTTP/1.1 parsers (the libFuzzer target `HTTP1Fuzz` in
/// `fuzz/` and the corpus replay test call these). They return normally on every input: a
/// thrown `HTTP1ParseError` is the expected outcome for garbage; a trap is a finding.
/// Invariants checked (a `precondition` failure is a finding):
/// - the same input fed whole, one byte at a time (up to 48 bytes) and split at two points
///   chosen from the input gives the same messages and the same refusal;
/// - `consumed` never passes the input, body ranges lie inside it, and a nil event means
///   every byte was consumed;
/// - an accepted head, serialized again, parses to an equal head;
/// - its `content-type`, as a gRPC refusal would use it, gives valid fields (`checkGRPC`).
public enum HTTP1FuzzEntry {
    /// The first byte chooses the parser (even: request, odd: response, then whether the
    /// response answers HEAD); the rest is the byte stream.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let stream = Array(data.dropFirst())
        if first & 1 == 0 { request(stream) } else { response(stream, toHEAD: first & 2 != 0) }
    }

    struct Outcome: Equatable {
        var heads: [String] = []
        var bodies: [[UInt8]] = []
        var trailers: [HTTP1Fields] = []
        var error: HTTP1ParseError?
    }

    public static func request(_ data: [UInt8]) {
        let whole = feedRequests(data, splits: [])
        for splits in splitPlans(data) {
            precondition(feedRequests(data, splits: splits) == whole, "request: split feeding differs")
        }
    }

    public static func response(_ data: [UInt8], toHEAD: Bool) {
        let whole = feedResponses(data, toHEAD: toHEAD, splits: [])
        for splits in splitPlans(data) {
            precondition(
                feedResponses(data, toHEAD: toHEAD, splits: splits) == whole, "response: split feeding differs")
        }
    }

    /// Chunk boundaries: every byte for short inputs, and two points taken from the input.
    static func splitPlans(_ data: [UInt8]) -> [[Int]] {
        guard data.count > 1 else { return [] }
        var plans: [[Int]] = []
        if data.count <= 48 { plans.append(Array(1..<data.count)) }
        let a = Int(data[data.count / 2]) * data.count / 256
        let b = Int(data[data.count - 1]) * data.count / 256
        plans.append([min(a, b), max(a, b)].filter { $0 > 0 && $0 < data.count })
        return plans
    }

    static func chunks(_ data: [UInt8], _ splits: [Int]) -> [ArraySlice<UInt8>] {
        var out: [ArraySlice<UInt8>] = []
        var start = 0
        for s in splits + [data.count] where s >= start {
            out.append(data[start..<s])
            start = s
        }
        return out
    }

    static func feedRequests(_ data: [UInt8], splits: [Int]) -> Outcome {
        var parser = HTTP1RequestParser()
        var outcome = Outcome()
        var body: [UInt8] = []
        do {
            for chunk in chunks(data, splits) {
                var buffer = Array(chunk)
                while true {
                    let (consumed, event) = try parser.parse(buffer)
                    precondition(consumed >= 0 && consumed <= buffer.count, "request: consumed past the input")
                    switch event {
                    case .head(let head)?:
                        checkRoundTrip(head)
                        checkGRPC(head.fields)
                        outcome.heads.append(head.description)
                        body = []
                    case .body(let range)?:
                        precondition(
                            range.lowerBound >= 0 && range.upperBound <= consumed && !range.isEmpty,
                            "request: body range")
                        body += buffer[range]
                    case .end(let trailers)?:
                        outcome.bodies.append(body)
                        outcome.trailers.append(trailers)
                    case nil:
                        precondition(consumed == buffer.count, "request: nil event left bytes")
                    }
                    buffer.removeFirst(consumed)
                    if event == nil { break }
                }
            }
        } catch {
            outcome.error = error
        }
        return outcome
    }

    static func feedResponses(_ data: [UInt8], toHEAD: Bool, splits: [Int]) -> Outcome {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(toHEAD: toHEAD)
        var outcome = Outcome()
        var body: [UInt8] = []
        do {
            for chunk in chunks(data, splits) where !parser.isUpgraded {
                var buffer = Array(chunk)
                while true {
                    let (consumed, event) = try parser.parse(buffer)
                    precondition(consumed >= 0 && consumed <= buffer.count, "response: consumed past the input")
                    switch event {
                    case .informational(let head)?, .head(let head)?:
                        checkRoundTrip(head, toHEAD: toHEAD)
                        outcome.heads.append(head.description)
                        body = []
                    case .body(let range)?:
                        precondition(
                            range.lowerBound >= 0 && range.upperBound <= consumed && !range.isEmpty,
                            "response: body range")
                        body += buffer[range]
                    case .end(let trailers)?:
                        outcome.bodies.append(body)
                        outcome.trailers.append(trailers)
                        if !parser.isUpgraded { parser.expectResponse(toHEAD: toHEAD) }
                    case nil:
                        precondition(consumed == buffer.count || parser.isUpgraded, "response: nil event left bytes")
                    }
                    buffer.removeFirst(consumed)
                    if event == nil { break }
                }
            }
            if case .end? = try parser.finish() { outcome.bodies.append(body) }
        } catch {
            outcome.error = error
        }
        return outcome
    }

    static func serialize(_ fields: HTTP1Fields) -> [UInt8] {
        var out: [UInt8] = []
        for field in fields {
            out += field.nameBytes
            out += [0x3A, 0x20]
            out += field.valueBytes
            out += [0x0D, 0x0A]
        }
        return out + [0x0D, 0x0A]
    }

    static func checkRoundTrip(_ head: HTTP1RequestHead) {
        let wire =
            Array(head.method.utf8) + [0x20] + Array(head.targetBytes) + [0x20]
            + Array(head.version.description.utf8) + [0x0D, 0x0A] + serialize(head.fields)
        var parser = HTTP1RequestParser()
        guard case .head(let again)? = try? parser.parse(wire).event else {
            preconditionFailure("request: a serialized head does not parse again")
        }
        precondition(again == head, "request: a serialized head parses differently")
    }

    static func checkRoundTrip(_ head: HTTP1ResponseHead, toHEAD: Bool) {
        let wire =
            Array("\(head.version) \(head.status) ".utf8) + Array(head.reasonBytes) + [0x0D, 0x0A]
            + serialize(head.fields)
        var parser = HTTP1ResponseParser()
        parser.expectResponse(toHEAD: toHEAD)
        let event = try? parser.parse(wire).event
        switch event {
        case .head(let again)?, .informational(let again)?:
            precondition(again == head, "response: a serialized head parses differently")
        default:
            preconditionFailure("response: a serialized head does not parse again")
        }
    }
}
