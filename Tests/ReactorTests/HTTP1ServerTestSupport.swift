import Dispatch
import Foundation
import Glibc

@testable import Reactor

/// An `HTTPServer` on 127.0.0.1 with its loop on a thread of its own, so a test can talk
/// to it with a blocking client. Everything the handler sees stays on the loop thread; the
/// test reads it through `onLoop`.
final class HTTP1ServerHarness: @unchecked Sendable {
    let loop: EventLoop
    let port: UInt16
    private(set) var server: HTTPServer?
    private var keepRunning: LoopTimer?
    private let stopped = DispatchSemaphore(value: 0)

    /// `loop`: given when the handler needs it (to answer later).
    /// `tls`: the server's sockets speak TLS. `budget`: shared with other servers.
    init(
        loop: EventLoop = EventLoop(), options: HTTPServerOptions = HTTPServerOptions(), tls: TLSContext? = nil,
        budget: ConnectionBudget? = nil, handler: @escaping (ServerExchange) -> Void
    ) throws {
        self.loop = loop
        let fd = try Listener.open(host: "127.0.0.1", port: 0)
        port = Listener.port(of: fd)
        let server = HTTPServer(loop: loop, options: options, tls: tls, budget: budget, handler: handler)
        try server.serve(listeningSocket: fd)
        self.server = server
        keepRunning = LoopTimer(loop: loop, seconds: 3600, repeating: true) {}
        let thread = Thread { [loop, stopped] in
            loop.run()
            stopped.signal()
        }
        thread.start()
    }

    /// Runs `body` on the loop thread and returns its result (at most 10 s).
    func onLoop<T>(_ body: @escaping () -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            box.value = body()
            done.signal()
        }
        precondition(done.wait(timeout: .now() + 10) == .success, "the loop did not answer")
        return box.value!
    }

    /// Polls `condition` on the loop until it holds or `limit` seconds pass.
    func wait(limit: Double = 5, until condition: @escaping () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(limit)
        while Date() < end {
            if onLoop(condition) { return true }
            usleep(5_000)
        }
        return false
    }

    /// Frees the server on its loop (closing every connection), then stops the loop.
    func stop() {
        onLoop {
            self.server = nil
            self.keepRunning = nil
        }
        loop.stop()
        _ = stopped.wait(timeout: .now() + 10)
    }
}

extension Responder {
    /// Writes `text` as one body chunk (the buffer lives through the call: a `BodyChunk`
    /// does not own its bytes).
    func write(text: String, drained: (() -> Void)? = nil) {
        let buffer = ByteQueue(text)
        withExtendedLifetime(buffer) { write(buffer.chunk, drained: drained) }
    }
}

final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// What the handler saw and how each responder completed, kept on the loop thread. It is
/// each recorded responder's observer.
final class ExchangeLog: ResponderObserver, @unchecked Sendable {
    var heads: [HTTPRequestHead] = []
    var connections: [ClientConnection] = []
    /// One entry per completed responder: flushed or not.
    var completions: [Bool] = []
    var clientGone = 0
    var bodyResults: [Result<[UInt8], RequestBodyFailure>] = []

    /// Then run when a recorded responder's client is gone (after it is counted).
    var onClientGone: ((Responder) -> Void)?

    /// Records the exchange and counts its responder's completion and client-gone reports.
    func record(_ exchange: ServerExchange) {
        heads.append(exchange.head)
        connections.append(exchange.connection)
        exchange.responder.observer = self
    }

    func completed(_ responder: Responder, flushed: Bool) { completions.append(flushed) }

    func clientGone(_ responder: Responder) {
        clientGone += 1
        onClientGone?(responder)
    }
}

/// A body sink that keeps what it is given.
final class CollectingSink: RequestBodySink {
    var bytes: [UInt8] = []
    var chunks = 0
    var ended = false
    var trailers = HTTP1Fields()
    var failure: RequestBodyFailure?
    var onEnd: (() -> Void)?
    var onChunk: ((CollectingSink) -> Void)?

    func requestBody(_ chunk: BodyChunk) {
        chunks += 1
        bytes += chunk.take()
        onChunk?(self)
    }

    func requestBodyEnd(trailers: HTTP1Fields) {
        ended = true
        self.trailers = trailers
        onEnd?()
    }

    func requestBodyFailed(_ failure: RequestBodyFailure) {
        self.failure = failure
        onEnd?()
    }
}

/// A parsed response as a test client saw it.
struct TestResponse {
    var statusLine: String
    var status: Int
    var fields: [(name: String, value: String)]
    var body: [UInt8]

    func field(_ name: String) -> String? { fields.first { $0.name.lowercased() == name.lowercased() }?.value }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking TCP client with receive and send timeouts: a test that waits for bytes that
/// never come fails after `timeout` instead of hanging. Over TLS once `startTLS` succeeded.
final class TestClient {
    let fd: Int32
    private var buffer: [UInt8] = []
    private(set) var sawEOF = false
    /// The TLS session (`TestTLSSession`), when there is one.
    var tls: TestTLSSession?

    init(port: UInt16, timeout: Double = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        setTimeout(timeout)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            close(fd)
            throw ReactorError("connect: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    func setTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { raw in
                tls.map { $0.write(raw) } ?? Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            guard n > 0 else { return }
            sent += n
        }
    }

    /// Reads more bytes into the buffer; false at end of stream, on error or on timeout.
    @discardableResult
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { raw in
            tls.map { $0.read(raw) } ?? recv(fd, raw.baseAddress, raw.count, 0)
        }
        if n == 0 { sawEOF = true }
        guard n > 0 else { return false }
        buffer += chunk[..<n]
        return true
    }

    /// The next response; nil if the connection ended (or timed out) before a whole one.
    /// `bodyless`: a response to HEAD.
    func readResponse(bodyless: Bool = false) -> TestResponse? {
        var headEnd: Int?
        while true {
            if let i = find([13, 10, 13, 10]) {
                headEnd = i
                break
            }
            if !fill() { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let status = Int(statusLine.split(separator: " ")[1]) ?? 0
        let fields = lines.map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = TestResponse(statusLine: statusLine, status: status, fields: fields, body: [])
        if bodyless || status < 200 || status == 204 || status == 304 { return response }
        if let length = response.field("Content-Length").flatMap(Int.init) {
            while buffer.count < length { if !fill() { return nil } }
            response.body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else if response.field("Transfer-Encoding") == "chunked" {
            while true {
                var lineEnd: Int?
                while true {
                    if let i = find([13, 10]) {
                        lineEnd = i
                        break
                    }
                    if !fill() { return nil }
                }
                let size = Int(String(decoding: buffer[..<lineEnd!], as: UTF8.self), radix: 16) ?? 0
                buffer.removeFirst(lineEnd! + 2)
                while buffer.count < size + 2 { if !fill() { return nil } }
                response.body += buffer[..<size]
                buffer.removeFirst(size + 2)
                if size == 0 { break }
            }
        } else {
            while fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Whether the server closed the connection (end of stream with no byte before it)
    /// within the receive timeout.
    func closedByPeer() -> Bool {
        guard buffer.isEmpty else { return false }
        if sawEOF { return true }
        return !fill() && sawEOF && buffer.isEmpty
    }

    /// Everything until the end of stream (or the timeout).
    func readToEnd() -> [UInt8] {
        while fill() {}
        defer { buffer = [] }
        return buffer
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for i in 0...(buffer.count - pattern.count) where buffer[i..<(i + pattern.count)].elementsEqual(pattern) {
            return i
        }
        return nil
    }
}
