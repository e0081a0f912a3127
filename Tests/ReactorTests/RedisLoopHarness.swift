import Foundation

@testable import Reactor

/// One loop for a Redis test, run in bounded steps: each `run` ends when its `finish` is
/// called or its time limit passes, so a client that hangs fails the test instead of
/// hanging it. Between steps the test may block (restart a server) while the loop waits.
final class RedisLoopHarness {
    typealias Reply = Result<RedisReply, RedisError>

    let loop = EventLoop()

    /// Runs the loop until `finish` is called or `limit` seconds pass; true if finished.
    /// A `finish` from an earlier step (a late completion) does not end a later one.
    @discardableResult
    func run(limit: Double = 5, _ start: (_ finish: @escaping () -> Void) -> Void) -> Bool {
        loop.runStep(limit: limit, start)
    }

    /// Sends one command and runs the loop until its completion; nil if none came in time.
    func send(_ client: RedisClient, _ arguments: [String], limit: Double = 5) -> Reply? {
        var reply: Reply?
        run(limit: limit) { finish in
            client.send(arguments) {
                reply = $0
                finish()
            }
        }
        return reply
    }

    /// Binary arguments.
    func send(_ client: RedisClient, bytes arguments: [[UInt8]], limit: Double = 5) -> Reply? {
        var reply: Reply?
        run(limit: limit) { finish in
            client.send(arguments) {
                reply = $0
                finish()
            }
        }
        return reply
    }

    /// Sends all commands at once (pipelined) and runs until every completion has come.
    func sendAll(_ client: RedisClient, _ commands: [[String]], limit: Double = 10) -> [Reply] {
        var replies: [Reply] = []
        run(limit: limit) { finish in
            for command in commands {
                client.send(command) { reply in
                    replies.append(reply)
                    if replies.count == commands.count { finish() }
                }
            }
        }
        return replies
    }

    /// Sends one command through the deployment entry point, with its keys named or (nil)
    /// derived, and runs the loop until its completion; nil if none came in time.
    func send(_ redis: Redis, _ arguments: [String], keys: [Int]? = nil, limit: Double = 5) -> Reply? {
        var reply: Reply?
        run(limit: limit) { finish in
            if let keys {
                redis.send(arguments, keys: keys) {
                    reply = $0
                    finish()
                }
            } else {
                redis.send(arguments) {
                    reply = $0
                    finish()
                }
            }
        }
        return reply
    }

    /// Sends all commands at once through the entry point (keys derived) and runs until every
    /// completion has come; the replies in the order of the commands.
    func sendAll(_ redis: Redis, _ commands: [[String]], limit: Double = 10) -> [Reply] {
        var replies = [Reply?](repeating: nil, count: commands.count)
        var count = 0
        run(limit: limit) { finish in
            for (i, command) in commands.enumerated() {
                redis.send(command) { reply in
                    replies[i] = reply
                    count += 1
                    if count == commands.count { finish() }
                }
            }
        }
        return replies.compactMap { $0 }
    }

    /// Lets the loop run (timers, completions) for `seconds`.
    func wait(_ seconds: Double) {
        run(limit: seconds + 5) { [loop] finish in loop.schedule(after: seconds, finish) }
    }

    /// Sends `arguments` every 50 ms until a reply that is not a failure, for at most `limit`
    /// seconds (a client recovering after its backoff); the last result.
    func sendUntilSuccess(_ client: RedisClient, _ arguments: [String], limit: Double) -> Reply? {
        let until = Date().addingTimeInterval(limit)
        var last: Reply?
        while Date() < until {
            last = send(client, arguments, limit: max(0.1, until.timeIntervalSinceNow))
            if case .success? = last { return last }
            wait(0.05)
        }
        return last
    }
}

extension RedisReply {
    static func bulk(_ text: String) -> RedisReply { .bulk(Array(text.utf8)) }

    /// A bulk or status reply as text, nil for others.
    var text: String? {
        switch self {
        case .bulk(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .status(let text): return text
        default: return nil
        }
    }
}

extension Result where Success == RedisReply, Failure == RedisError {
    /// The error kind of a failure, nil for a reply.
    var failureKind: RedisError.Kind? {
        if case .failure(let e) = self { return e.kind }
        return nil
    }
}
