/// A request body read whole before the upstream hears of the request, as nginx's
/// `proxy_request_buffering` does: a client that trickles its body holds a connection to the
/// gateway, never one to the upstream (nor the application worker behind it). The first
/// `memory` bytes stay in memory; the rest goes to a `BodySpool` file. Once read, it is a
/// `RequestBody` again, of known length where it can be (the upstream gets `Content-Length`,
/// whatever the client's framing), streamed from memory and file with backpressure.
/// Loop-thread only.
public final class SpooledRequestBody: RequestBody {
    public enum Outcome: Equatable {
        /// Every byte is here: the body may be streamed.
        case whole
        /// The client's body failed as it would have when streamed (too large, too slow, cut).
        case failed(RequestBodyFailure)
        /// No file could be made or written, or the process's spool cap is reached.
        case noRoom
    }

    private let source: RequestBody
    private let memoryLimit: Int
    private let directory: String
    private let budget: SpoolBudget
    private let client: String?
    private let maxBytes: Int
    private let limit: StreamedBodyLimit
    private let memory = ByteQueue()
    private var spool: BodySpool?
    private var length: UInt64 = 0
    private var trailers = HTTP1Fields()
    private var reading: ((Outcome) -> Void)?
    private var reader: Reader?
    // Streaming the body back out.
    private var sink: RequestBodySink?
    private var paused = false
    private var pumping = false
    private var pumpAgain = false

    /// `maxBytes`: the most one body may put on disk (`max_body_size` bounds it anyway);
    /// `client`: whose share of `budget` the file's bytes count in; `limit`: what bounds the
    /// body as it is read (a gRPC call's messages).
    public init(
        reading source: RequestBody, memory: Int, directory: String, budget: SpoolBudget, maxBytes: Int,
        client: String? = nil, limit: StreamedBodyLimit = .server
    ) {
        self.limit = limit
        self.source = source
        self.memoryLimit = memory
        self.directory = directory
        self.budget = budget
        self.client = client
        self.maxBytes = maxBytes
    }

    /// Whether part of the body went to a file.
    public var spooled: Bool { spool != nil }

    /// Shows the body read whole, in order, without taking it: memory, then the file. False
    /// when the file cannot be read back.
    public func scan(_ visit: (UnsafeRawBufferPointer) -> Void) -> Bool {
        memory.scan(visit)
        return spool?.scan(visit) ?? true
    }

    /// Reads the client's body (saying `100 Continue` first if the client waits for it);
    /// `done` is called once. After a failure the body is spent: the connection must close
    /// after its answer.
    public func read(_ done: @escaping (Outcome) -> Void) {
        reading = done
        let reader = Reader(self)
        self.reader = reader
        source.stream(to: reader, limit: limit)
    }

    /// The engine's bytes, kept in order: memory while it has room, then the file.
    fileprivate func received(_ chunk: BodyChunk) {
        guard reading != nil else {
            chunk.drop()
            return
        }
        length += UInt64(chunk.count)
        if spool == nil && memory.count + chunk.count <= memoryLimit {
            chunk.move(to: memory)
            return
        }
        if spool == nil {
            guard let made = BodySpool(directory: directory, budget: budget, maxBytes: maxBytes, source: client) else {
                chunk.drop()
                budget.countFailure()
                end(.noRoom)
                return
            }
            spool = made
        }
        guard let spool else { return }
        switch spool.append(chunk) {
        case .stored:
            break
        case .full, .failed:
            budget.countFailure()
            end(.noRoom)
        }
    }

    fileprivate func ended(_ trailers: HTTP1Fields) {
        self.trailers = trailers
        end(.whole)
    }

    fileprivate func end(_ outcome: Outcome) {
        guard let done = reading else { return }
        reading = nil
        reader = nil
        if outcome != .whole {
            memory.drain()
            spool = nil
        }
        done(outcome)
    }

    // MARK: RequestBody: the body read, streamed out again

    /// A trailer section can only follow a streamed body (RFC 9112 §7.1.2); without one, the
    /// length is known and said.
    public var framing: RequestBodyFraming { trailers.isEmpty ? .length(length) : .streamed }
    /// The client had its `100 Continue` when the body was read.
    public var expectsContinue: Bool { false }
    public func sendContinue() {}

    public func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        guard length <= UInt64(limit) else {
            discard()
            done(.failure(.tooLarge))
            return
        }
        var bytes = memory.chunk.take()
        while let spool, spool.pending > 0 {
            guard let chunk = spool.next(max: 1 << 20) else {
                // The file could not be read back: never a body cut short as if whole.
                budget.countFailure()
                self.spool = nil
                done(.failure(.malformed))
                return
            }
            bytes += chunk.take()
        }
        spool = nil
        done(.success(bytes))
    }

    public func stream(to sink: RequestBodySink) {
        self.sink = sink
        pump()
    }

    public func pause() { paused = true }

    public func resume() {
        paused = false
        pump()
    }

    public func discard() {
        sink = nil
        memory.drain()
        spool = nil
    }

    /// Hands the sink what it will take: memory first, then the file, then the end. A sink
    /// may pause or resume from inside `requestBody`; the loop keeps that from recursing.
    private func pump() {
        if pumping {
            pumpAgain = true
            return
        }
        pumping = true
        defer { pumping = false }
        repeat {
            pumpAgain = false
            while !paused, let sink {
                if memory.count > 0 {
                    sink.requestBody(memory.chunk)
                } else if let spool, spool.pending > 0 {
                    guard let chunk = spool.next(max: memoryLimit) else {
                        // The file could not be read back: the body cannot go on whole.
                        budget.countFailure()
                        self.sink = nil
                        self.spool = nil
                        sink.requestBodyFailed(.malformed)
                        return
                    }
                    sink.requestBody(chunk)
                } else {
                    self.sink = nil
                    spool = nil
                    sink.requestBodyEnd(trailers: trailers)
                    return
                }
            }
        } while pumpAgain
    }

    /// The sink the engine streams to: weak, so a body abandoned by the gateway is freed
    /// whatever the engine still holds.
    private final class Reader: RequestBodySink {
        weak var owner: SpooledRequestBody?
        init(_ owner: SpooledRequestBody) { self.owner = owner }

        func requestBody(_ chunk: BodyChunk) {
            guard let owner else {
                chunk.drop()
                return
            }
            owner.received(chunk)
        }
        func requestBodyEnd(trailers: HTTP1Fields) { owner?.ended(trailers) }
        func requestBodyFailed(_ failure: RequestBodyFailure) { owner?.end(.failed(failure)) }
    }
}
