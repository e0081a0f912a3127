import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// Poll delivery (RFC 8936) of one stream, on the main loop: a POST to the stream's poll
/// endpoint with `maxEvents`, `returnImmediately: false` (the transmitter holds the request
/// until it has events: long polling), the `ack` of the SETs applied since the last poll, and
/// the `setErrs` of those refused. A SET is acknowledged only once it is applied (and, with a
/// Redis store, stored): a restart between a poll and its apply loses nothing, since the
/// transmitter delivers an unacknowledged SET again. RFC 8936 §2.4 would let a receiver
/// acknowledge first; then an event could be lost.
final class PollDelivery {
    /// `post(url, body, timeout, done)`: the stream's authenticated call; `done` gets the
    /// status and body, or the failure.
    typealias Post = (
        _ url: String, _ body: JSONValue, _ timeout: Double,
        _ done: @escaping (Result<(Int, [UInt8]), FetchError>) -> Void
    ) -> Void

    static let maxEvents = 64
    /// How long a long poll may be held: transmitters hold one for up to 30 s.
    static let timeout = 65.0

    let url: String
    private let name: String
    private let interval: Double
    private let loop: EventLoop
    private let log: Logger
    private let intake: SecurityEventIntake
    private let post: Post
    /// What the next poll tells the transmitter.
    private var acks: [String] = []
    private var errors: [String: (err: String, description: String)] = [:]
    private var retryDelay = 1.0
    private var timer: LoopTimer?
    private var stopped = false

    init(
        url: String, config: TransmitterConfig, loop: EventLoop, log: Logger, intake: SecurityEventIntake,
        post: @escaping Post
    ) {
        self.url = url
        name = config.name
        interval = config.pollInterval
        self.loop = loop
        self.log = log
        self.intake = intake
        self.post = post
    }

    func start() { poll() }

    func stop() {
        stopped = true
        timer = nil
    }

    /// The poll request's body (RFC 8936 §2.4); what it acknowledges is dropped from the
    /// next one only once the transmitter answered it.
    var requestBody: JSONValue {
        var o = JSONObject([
            "maxEvents": .number(String(Self.maxEvents)), "returnImmediately": .bool(false)
        ])
        if !acks.isEmpty { o["ack"] = .array(acks.map { .string($0) }) }
        if !errors.isEmpty {
            var errs = JSONObject()
            for (jti, e) in errors.sorted(by: { $0.key < $1.key }) {
                errs[jti] = .object(JSONObject(["err": .string(e.err), "description": .string(e.description)]))
            }
            o["setErrs"] = .object(errs)
        }
        return .object(o)
    }

    private func poll() {
        guard !stopped else { return }
        let sentAcks = Set(acks)
        let sentErrors = Set(errors.keys)
        post(url, requestBody, Self.timeout) { [self] result in
            guard !stopped else { return }
            switch result {
            case .failure(let e): return failed("\(url): \(e.description)")
            case .success((let status, let body)):
                guard status == 200, let o = (try? JSONParser.parse(body))?.object else {
                    return failed("the poll endpoint answered \(status)")
                }
                if retryDelay > 1 { intake.hub.update(name) { $0.lastError = nil } }
                retryDelay = 1
                acks.removeAll { sentAcks.contains($0) }
                for jti in sentErrors { errors[jti] = nil }
                take(o)
            }
        }
    }

    /// Each SET of an answer, through the intake; the next poll goes once all are judged:
    /// at once when there were some (or more are waiting), else after `poll_interval`.
    private func take(_ answer: JSONObject) {
        var sets: [(jti: String, token: String)] = []
        if let all = answer["sets"]?.object {
            for jti in all.names { if let token = all[jti]?.string { sets.append((jti, token)) } }
        }
        // `moreAvailable` with nothing given is no reason to ask again at once.
        guard !sets.isEmpty else { return next(after: interval) }
        var left = sets.count
        var deferred = false
        for (jti, token) in sets {
            intake.receive(token, from: name, jti: jti) { [self] outcome in
                switch outcome {
                case .accepted: acks.append(jti)
                case .refused(let err, let description): errors[jti] = (err, description)
                case .notNow(_, _, let detail):
                    // Neither acknowledged nor refused: the transmitter delivers it again,
                    // after a wait (the store or the keys may be back by then).
                    deferred = true
                    log.warning(
                        "ssf polled event not applied now",
                        metadata: [
                            "transmitter": .string(name), "jti": .string(String(jti.prefix(64))),
                            "error": .string(detail)
                        ])
                }
                left -= 1
                if left == 0 { next(after: deferred ? max(interval, 1) : 0) }
            }
        }
    }

    private func next(after delay: Double) {
        guard !stopped else { return }
        if delay <= 0 {
            loop.execute { [weak self] in self?.poll() }
        } else {
            timer = LoopTimer(loop: loop, seconds: delay, repeating: false) { [weak self] in self?.poll() }
        }
    }

    private func failed(_ why: String) {
        log.warning("ssf poll failed", metadata: ["transmitter": .string(name), "error": .string(why)])
        intake.hub.update(name) { $0.lastError = "poll: \(why)" }
        let delay = retryDelay
        retryDelay = min(retryDelay * 2, 60)
        next(after: delay)
    }
}
