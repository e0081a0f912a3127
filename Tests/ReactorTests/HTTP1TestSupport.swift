import Reactor

/// Feeds an HTTP/1.1 parser the way a connection will: chunks of a chosen size, each parsed
/// until the parser asks for more, body ranges copied out. The results are compared across
/// chunk sizes, so they hold only what must not depend on how the bytes arrived.
struct ParsedRequest: Equatable, CustomStringConvertible {
    var head: HTTP1RequestHead
    var body: [UInt8] = []
    var trailers = HTTP1Fields()

    var description: String { "\(head) body=\(body.count)B trailers=\(trailers)" }
}

struct RequestOutcome: Equatable, CustomStringConvertible {
    var messages: [ParsedRequest] = []
    var error: HTTP1ParseError.Code?
    /// The parser ended between messages (nothing of a next request taken).
    var idle = false

    var description: String { "\(messages) error=\(error?.rawValue ?? "none") idle=\(idle)" }

    /// The single message of an accepted one-request input.
    var only: ParsedRequest? { error == nil && messages.count == 1 ? messages[0] : nil }
}

/// The feedings a parser's outcome must not depend on, as cut points (see `parseRequests`):
/// one byte at a time, then each single cut (the bytes before it in one chunk, the rest in
/// another). Everything at once is no cut at all.
func everyFeeding(_ count: Int) -> [[Int]] {
    guard count > 1 else { return [] }
    return [Array(1..<count)] + (1..<count).map { [$0] }
}

/// Chunks of `chunk` bytes, as cut points.
func chunkCuts(_ count: Int, chunk: Int) -> [Int] {
    Array(stride(from: chunk, to: count, by: chunk))
}

func parseRequests(_ wire: [UInt8], chunk: Int = .max, limits: HTTP1Limits = HTTP1Limits()) -> RequestOutcome {
    parseRequests(wire, cuts: chunkCuts(wire.count, chunk: chunk), limits: limits)
}

/// `cuts`: ascending indices of `wire` where one chunk ends and the next begins.
func parseRequests(_ wire: [UInt8], cuts: [Int], limits: HTTP1Limits = HTTP1Limits()) -> RequestOutcome {
    var parser = HTTP1RequestParser(limits: limits)
    var outcome = RequestOutcome()
    var current: ParsedRequest?
    var offset = 0
    do {
        for end in cuts + [wire.count] where end > offset {
            var buffer = Array(wire[offset..<end])
            offset = end
            while true {
                let (consumed, event) = try parser.parse(buffer)
                switch event {
                case .head(let head)?: current = ParsedRequest(head: head)
                case .body(let range)?: current?.body += buffer[range]
                case .end(let trailers)?:
                    current?.trailers = trailers
                    if let current { outcome.messages.append(current) }
                    current = nil
                case nil: break
                }
                buffer.removeFirst(consumed)
                if event == nil { break }
            }
            precondition(buffer.isEmpty, "a nil event must mean every byte was consumed")
        }
        // A body that needs no more bytes ends without input.
        while case (_, let event?) = try parser.parse([UInt8]()) {
            if case .end(let trailers) = event, var done = current {
                done.trailers = trailers
                outcome.messages.append(done)
                current = nil
            }
        }
    } catch {
        outcome.error = error.code
    }
    outcome.idle = parser.isIdle
    return outcome
}

struct ParsedResponse: Equatable, CustomStringConvertible {
    var interim: [HTTP1ResponseHead] = []
    var head: HTTP1ResponseHead?
    var body: [UInt8] = []
    var trailers = HTTP1Fields()

    var description: String {
        "interim=\(interim.map(\.status)) \(head.map { "\($0)" } ?? "-") body=\(body.count)B trailers=\(trailers)"
    }
}

struct ResponseOutcome: Equatable, CustomStringConvertible {
    var messages: [ParsedResponse] = []
    var error: HTTP1ParseError.Code?
    var upgraded = false

    var description: String { "\(messages) error=\(error?.rawValue ?? "none") upgraded=\(upgraded)" }
    var only: ParsedResponse? { error == nil && messages.count == 1 ? messages[0] : nil }
}

/// `toHEAD` lists the responses expected, in order (true: the request was HEAD).
/// `eof`: the stream ends after `wire` (close-delimited bodies end there).
func parseResponses(
    _ wire: [UInt8], toHEAD: [Bool] = [false], chunk: Int = .max, eof: Bool = true,
    limits: HTTP1Limits = HTTP1Limits()
) -> ResponseOutcome {
    parseResponses(wire, toHEAD: toHEAD, cuts: chunkCuts(wire.count, chunk: chunk), eof: eof, limits: limits)
}

/// `cuts`: as for `parseRequests`.
func parseResponses(
    _ wire: [UInt8], toHEAD: [Bool] = [false], cuts: [Int], eof: Bool = true,
    limits: HTTP1Limits = HTTP1Limits()
) -> ResponseOutcome {
    var parser = HTTP1ResponseParser(limits: limits)
    var outcome = ResponseOutcome()
    var expected = toHEAD[...]
    var current = ParsedResponse()
    if let first = expected.popFirst() { parser.expectResponse(toHEAD: first) }
    func handle(_ event: HTTP1ResponseParser.Event?, _ buffer: [UInt8]) {
        switch event {
        case .informational(let head)?: current.interim.append(head)
        case .head(let head)?: current.head = head
        case .body(let range)?: current.body += buffer[range]
        case .end(let trailers)?:
            current.trailers = trailers
            outcome.messages.append(current)
            current = ParsedResponse()
            if !parser.isUpgraded, let next = expected.popFirst() { parser.expectResponse(toHEAD: next) }
        case nil: break
        }
    }
    var offset = 0
    do {
        for end in cuts + [wire.count] where end > offset {
            // After a 101 the parser takes nothing more: the rest is the tunnel's.
            if parser.isUpgraded { break }
            var buffer = Array(wire[offset..<end])
            offset = end
            while true {
                let (consumed, event) = try parser.parse(buffer)
                handle(event, buffer)
                buffer.removeFirst(consumed)
                if event == nil { break }
            }
        }
        while case (_, let event?) = try parser.parse([UInt8]()) { handle(event, []) }
        if eof { handle(try parser.finish(), []) }
    } catch {
        outcome.error = error.code
    }
    outcome.upgraded = parser.isUpgraded
    return outcome
}

extension Array where Element == UInt8 {
    init(_ string: String) { self = Array(string.utf8) }
}
