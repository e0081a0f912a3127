import Foundation
import Testing

@testable import Reactor

/// The engine enforcing `HTTPServerOptions.bodyPace` against a trickling client: the body's
/// reader fails with `.tooSlow` / `.pastDeadline` at the bound (not at the silence timeout,
/// which the trickle never reaches), and the connection closes.
@Suite("HTTP/1.1 server: body deadline and minimum rate", .serialized)
struct HTTP1ServerBodyPaceTests {
    /// A server that collects each body and answers 408 when the reader fails for time.
    func harness(_ pace: BodyPace, log: ExchangeLog) throws -> HTTP1ServerHarness {
        var options = HTTPServerOptions()
        options.bodyTimeout = 10
        options.bodyPace = pace
        return try HTTP1ServerHarness(options: options) { exchange in
            log.record(exchange)
            exchange.body.collect(limit: 1 << 20) { result in
                log.bodyResults.append(result)
                if case .failure(let why) = result, why.isTimeout {
                    exchange.responder.respond(status: 408, close: true)
                } else {
                    exchange.responder.respond(status: 200)
                }
            }
        }
    }

    /// Sends one byte every `every` seconds until the server answers or closes; returns the
    /// status and the seconds it took.
    func trickle(_ client: TestClient, every: Double) -> (Int?, Double) {
        let started = Date()
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        client.setTimeout(every)
        for _ in 0..<100 {
            client.send("a")
            if let response = client.readResponse() { return (response.status, Date().timeIntervalSince(started)) }
            if client.sawEOF { break }
        }
        return (nil, Date().timeIntervalSince(started))
    }

    @Test func aBodyUnderTheMinimumRateFailsAfterTheGrace() throws {
        let log = ExchangeLog()
        let h = try harness(BodyPace(minRate: 1024, grace: 0.5), log: log)
        defer { h.stop() }
        let (status, took) = trickle(try TestClient(port: h.port), every: 0.1)
        #expect(status == 408)
        // Judged when the grace ends (0.5 s), long before the 10 s silence bound.
        #expect(took >= 0.45 && took < 2.5)
        #expect(h.wait { log.bodyResults.count == 1 })
        #expect(h.onLoop { log.bodyResults == [.failure(.tooSlow)] })
    }

    @Test func aBodyPastTheDeadlineFailsThere() throws {
        let log = ExchangeLog()
        let h = try harness(BodyPace(deadline: 1, minRate: 0), log: log)
        defer { h.stop() }
        let (status, took) = trickle(try TestClient(port: h.port), every: 0.1)
        #expect(status == 408)
        #expect(took >= 0.95 && took < 3)
        #expect(h.wait { log.bodyResults.count == 1 })
        #expect(h.onLoop { log.bodyResults == [.failure(.pastDeadline)] })
    }

    @Test func aBodyOnPaceIsRead() throws {
        let log = ExchangeLog()
        let h = try harness(BodyPace(deadline: 5, minRate: 1024, grace: 0.3), log: log)
        defer { h.stop() }
        let client = try TestClient(port: h.port)
        // 2 KB in four parts over ~0.6 s: above 1 KB/s throughout.
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n")
        for _ in 0..<4 {
            client.send(String(repeating: "b", count: 512))
            usleep(150_000)
        }
        #expect(client.readResponse()?.status == 200)
        #expect(h.wait { log.bodyResults.count == 1 })
        #expect(h.onLoop { (try? log.bodyResults[0].get())?.count == 2048 })
    }

    /// A gateway holding the body back (a slow upstream) is not the client's slowness.
    @Test func timePausedByTheReaderIsNotCounted() throws {
        var options = HTTPServerOptions()
        options.bodyPace = BodyPace(minRate: 1024, grace: 0.3)
        let loop = EventLoop()
        let sink = CollectingSink()
        let harness = try HTTP1ServerHarness(loop: loop, options: options) { exchange in
            sink.onEnd = {
                if let failure = sink.failure, failure.isTimeout {
                    exchange.responder.respond(status: 408, close: true)
                } else {
                    exchange.responder.respond(status: 200)
                }
            }
            // Held back for 1.5 s (five grace periods) from the first chunk on, then read on.
            sink.onChunk = { sink in
                guard sink.chunks == 1 else { return }
                exchange.body.pause()
                loop.schedule(after: 1.5) { exchange.body.resume() }
            }
            exchange.body.stream(to: sink)
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n" + String(repeating: "c", count: 2048))
        usleep(100_000)
        client.send(String(repeating: "c", count: 2048))
        #expect(client.readResponse()?.status == 200)
        #expect(harness.onLoop { sink.bytes.count == 4096 && sink.failure == nil })
    }
}
