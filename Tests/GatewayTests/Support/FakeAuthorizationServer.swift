import Foundation

@testable import Reactor

/// An in-process stand-in for an authorization server's endpoints, served by Reactor's own
/// HTTP server on 127.0.0.1 on the loop of the worker under test: each path answers what the
/// test sets, and every request's path and form body are recorded.
final class FakeAuthorizationServer {
    let loop: EventLoop
    private var server: HTTPServer!
    private(set) var port: UInt16 = 0
    var url: String { "http://127.0.0.1:\(port)" }
    /// path → (status, JSON body).
    var answers: [String: (Int, String)] = [:]
    private(set) var requests: [(path: String, body: String)] = []

    func hits(_ path: String) -> Int { requests.filter { $0.path == path }.count }

    init(loop: EventLoop) throws {
        self.loop = loop
        server = HTTPServer(loop: loop, options: HTTPServerOptions(), tls: nil) { [unowned self] ex in
            ex.body.collect(limit: 64 << 10) { body in
                let path = ex.head.target
                self.requests.append((path, String(decoding: (try? body.get()) ?? [], as: UTF8.self)))
                let (status, text) = self.answers[path] ?? (404, "{}")
                ex.responder.fields.append("Content-Type", "application/json")
                ex.responder.respond(status: status, body: Array(text.utf8))
            }
        }
        let fd = try Listener.open(host: "127.0.0.1", port: 0)
        port = Listener.port(of: fd)
        try server.serve(listeningSocket: fd)
    }
}

extension EventLoop {
    /// Runs the loop until `done()` holds (checked every few ms), or 10 s pass (a safety stop
    /// for a broken test, never a timing assert).
    func run(until done: @escaping () -> Bool) {
        let giveUp = Date().addingTimeInterval(10)
        func check() {
            if done() || Date() > giveUp { stop() } else { schedule(after: 0.002, check) }
        }
        schedule(after: 0, check)
        run()
    }
}
