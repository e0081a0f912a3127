import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// One transmitter's stream, kept up by the main loop (SSF 1.0 §7, §8): its metadata, its
/// keys, the stream (the one that exists is reused, so a restart or a second replica makes no
/// second stream), and a verification request whose event comes back by the stream's
/// delivery. A push stream goes to this gateway's `endpoint_url` with this receiver's
/// `Authorization`; a poll stream's SETs are fetched from the endpoint the transmitter names
/// (`PollDelivery`). Every call is bounded; a failure is retried from the start after 1 s,
/// doubling up to a minute. Routes serve meanwhile; the status page says where the stream stands.
final class TransmitterStream {
    static let pushMethod = TransmitterConfig.Delivery.push.method

    let config: TransmitterConfig
    private let loop: EventLoop
    private let log: Logger
    private let hub: SharedSignalsHub
    private let wallClock: any WallClock
    private let fetcher: HTTPFetcher
    /// The transmitter's signing keys (its metadata's `jwks_uri`), kept fresh.
    private(set) var keys: IssuerKeys?
    private let authorize: (@escaping (String?) -> Void) -> Void
    private var retryDelay = 1.0
    private var timer: LoopTimer?
    private var stopped = false
    /// Poll delivery, once the stream is up.
    private var poller: PollDelivery?
    /// What a polled SET goes through (the push endpoint has its own, per worker).
    private let intake: SecurityEventIntake

    init(
        config: TransmitterConfig, loop: EventLoop, log: Logger, hub: SharedSignalsHub, wallClock: any WallClock,
        revocationLog: RevocationLog.Writer?, authorize: @escaping (@escaping (String?) -> Void) -> Void
    ) {
        intake = SecurityEventIntake(hub: hub, log: revocationLog, loop: loop, wallClock: wallClock)
        self.config = config
        self.loop = loop
        self.log = log
        self.hub = hub
        self.wallClock = wallClock
        self.authorize = authorize
        var settings = FetchSettings()
        // The transmitter's endpoints carry its credential: no redirect is followed.
        settings.maxRedirects = 0
        fetcher = HTTPFetcher(loop: loop, settings: settings)
    }

    func start() { discover() }

    func stop() {
        stopped = true
        timer = nil
        poller?.stop()
        poller = nil
    }

    /// SSF 1.0 §7.2.1: `/.well-known/ssf-configuration` inserted before the issuer's path;
    /// Google's RISC has its own document.
    static func metadataURL(issuer: String, profile: TransmitterConfig.Profile = .ssf) -> String {
        if profile == .googleRISC { return issuer + "/.well-known/risc-configuration" }
        guard let end = issuer.range(of: "://") else { return issuer }
        let rest = issuer[end.upperBound...]
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        return String(issuer[..<slash]) + "/.well-known/ssf-configuration" + String(rest[slash...])
    }

    private func discover() {
        guard !stopped else { return }
        fetcher.fetch(
            FetchRequest(
                url: Self.metadataURL(issuer: config.issuer, profile: config.profile), timeout: 10,
                maxResponseBytes: 64 << 10)
        ) {
            [self] result in
            guard !stopped else { return }
            switch result.map({
                TransmitterMetadata.parse($0, issuer: config.issuer, delivery: config.delivery, profile: config.profile)
            }) {
            case .failure(let e): fail("metadata: \(e.description)")
            case .success(.failure(let why)): fail("metadata: \(why)")
            case .success(.success(let metadata)): loadKeys(metadata)
            }
        }
    }

    private func loadKeys(_ metadata: TransmitterMetadata) {
        let keys = IssuerKeys(
            name: "ssf:\(config.name)", source: .jwksURI(metadata.jwksURI), fetcher: fetcher, loop: loop,
            wallClock: wallClock)
        let name = config.name
        // A stream stopped by a reload (another issuer under the same name) writes no keys.
        keys.onUpdate = { [weak self, hub] set in
            guard let self, !self.stopped else { return }
            hub.update(name) { $0.keys = set }
        }
        self.keys = keys
        keys.start { [self] ok in
            guard !stopped else { return }
            guard ok else { return fail("keys: \(keys.lastError ?? "not loaded")") }
            if config.profile == .googleRISC { return updateGoogleStream(metadata) } else { findStream(metadata) }
        }
    }

    /// SSF 1.0 §8.1.1.2: the streams this receiver has. Ours is the push stream to our URL,
    /// or the poll stream (this receiver's one, by its description when there are several).
    private func findStream(_ metadata: TransmitterMetadata) {
        call(metadata.configurationEndpoint, body: nil) { [self] status, body in
            guard status == 200, let value = try? JSONParser.parse(body) else {
                return fail("streams: configuration endpoint answered \(status)")
            }
            let streams = value.array?.compactMap(\.object) ?? value.object.map { [$0] } ?? []
            let candidates = streams.filter { s in
                let delivery = s["delivery"]?.object
                guard delivery?["method"]?.string == config.delivery.method else { return false }
                return config.delivery == .poll || delivery?["endpoint_url"]?.string == config.endpointURL
            }
            let ours = candidates.first { $0["description"]?.string == description } ?? candidates.first
            guard let ours, let id = ours["stream_id"]?.string else { return createStream(metadata) }
            switch config.delivery {
            case .push: setDelivery(metadata, streamID: id)
            case .poll: updateEvents(metadata, stream: ours, streamID: id)
            }
        }
    }

    private var description: String { "tokengate \(config.name)" }

    /// Google's RISC has one stream per project, set whole by `stream:update` (its own API, not
    /// SSF's): push to our URL, with no credential to give, for its names of our events and
    /// its verification event (sent only when asked for).
    private func updateGoogleStream(_ metadata: TransmitterMetadata) {
        let body = JSONObject([
            "delivery": .object(
                JSONObject([
                    "delivery_method": .string(Self.googlePushMethod), "url": .string(config.endpointURL)
                ])),
            "events_requested": .array(
                (config.eventURIs + [SecurityEventType.risc + "verification"]).map { .string($0) })
        ])
        call(metadata.configurationEndpoint, body: .object(body)) { [self] status, _ in
            guard (200..<300).contains(status) else {
                return fail("stream:update answered \(status)")
            }
            up(metadata, streamID: Self.googleStreamID, stream: nil)
        }
    }

    static let googlePushMethod = "https://schemas.openid.net/secevent/risc/delivery-method/push"
    /// Google's project stream has no id; the state a verification asks with is derived from this.
    static let googleStreamID = "google-risc"

    /// A push stream's delivery carries our URL and credential; a poll stream's only its
    /// method (the transmitter names the poll endpoint).
    private var delivery: JSONValue {
        guard config.delivery == .push else { return .object(JSONObject(["method": .string(config.delivery.method)])) }
        return .object(
            JSONObject([
                "method": .string(Self.pushMethod), "endpoint_url": .string(config.endpointURL),
                "authorization_header": .string(hub.transmitter(named: config.name)?.pushAuthorization ?? "")
            ]))
    }

    private func createStream(_ metadata: TransmitterMetadata) {
        let body = JSONObject([
            "delivery": delivery, "events_requested": .array(config.eventURIs.map { .string($0) }),
            "description": .string(description)
        ])
        call(metadata.configurationEndpoint, body: .object(body)) { [self] status, reply in
            let stream = (try? JSONParser.parse(reply))?.object
            guard status == 200 || status == 201, let id = stream?["stream_id"]?.string else {
                return fail("create stream: configuration endpoint answered \(status)")
            }
            log.info("ssf stream created", metadata: ["transmitter": .string(config.name), "stream": .string(id)])
            up(metadata, streamID: id, stream: stream)
        }
    }

    /// An existing push stream: its delivery set to this receiver's URL and credential (every
    /// replica sets the same), SSF 1.0 §8.1.1.3.
    private func setDelivery(_ metadata: TransmitterMetadata, streamID: String) {
        let body = JSONObject([
            "stream_id": .string(streamID), "delivery": delivery,
            "events_requested": .array(config.eventURIs.map { .string($0) })
        ])
        call(metadata.configurationEndpoint, body: .object(body), method: "PATCH") { [self] status, _ in
            guard status == 200 || status == 202 || status == 204 else {
                return fail("update stream: configuration endpoint answered \(status)")
            }
            up(metadata, streamID: streamID, stream: nil)
        }
    }

    /// An existing poll stream: the events asked for set again; its delivery, and so its poll
    /// endpoint, left as the transmitter made it.
    private func updateEvents(_ metadata: TransmitterMetadata, stream: JSONObject, streamID: String) {
        let body = JSONObject([
            "stream_id": .string(streamID), "events_requested": .array(config.eventURIs.map { .string($0) })
        ])
        call(metadata.configurationEndpoint, body: .object(body), method: "PATCH") { [self] status, _ in
            guard status == 200 || status == 202 || status == 204 else {
                return fail("update stream: configuration endpoint answered \(status)")
            }
            up(metadata, streamID: streamID, stream: stream)
        }
    }

    private func up(_ metadata: TransmitterMetadata, streamID: String, stream: JSONObject?) {
        if config.delivery == .poll {
            // RFC 8936 §2: the transmitter names the poll endpoint in the stream's delivery.
            guard let url = stream?["delivery"]?.object?["endpoint_url"]?.string,
                metadata.allows(url)
            else { return fail("the stream names no usable poll endpoint_url") }
            startPolling(url)
        }
        retryDelay = 1
        hub.update(config.name) {
            $0.streamID = streamID
            $0.status = "enabled, not verified"
            $0.lastError = nil
        }
        guard let endpoint = metadata.verificationEndpoint,
            let credential = hub.transmitter(named: config.name)?.pushAuthorization
        else { return }
        // SSF 1.0 §8.1.4.2: the transmitter sends a verification event with this state, which
        // every replica derives alike (the event may reach any of them).
        let state = SharedSignalsHub.verificationState(credential, stream: streamID)
        let body =
            config.profile == .googleRISC
            ? JSONObject(["state": .string(state)])
            : JSONObject(["stream_id": .string(streamID), "state": .string(state)])
        // The stream is up whatever comes of it: a failed request is logged, not retried from
        // the start (that would remake the stream every second against a broken endpoint).
        let warn = { [log, name = config.name] (why: String) in
            log.warning(
                "ssf verification request failed", metadata: ["transmitter": .string(name), "error": .string(why)])
        }
        call(endpoint, body: .object(body), failed: warn) { status, _ in
            if !(200..<300).contains(status) { warn("answered \(status)") }
        }
    }

    private func startPolling(_ url: String) {
        guard poller?.url != url else { return }
        poller?.stop()
        let poller = PollDelivery(url: url, config: config, loop: loop, log: log, intake: intake) {
            [weak self] url, body, timeout, done in
            self?.authorized(url, body: body, method: nil, timeout: timeout, done: done)
        }
        self.poller = poller
        poller.start()
    }

    /// A call to the transmitter with its credential: `done(status, body)`; a failure to call
    /// at all is `fail`ed here.
    private func call(
        _ url: String, body: JSONValue?, method: String? = nil, failed: ((String) -> Void)? = nil,
        done: @escaping (Int, [UInt8]) -> Void
    ) {
        authorized(url, body: body, method: method, timeout: 10) { [self] result in
            switch result {
            case .success((let status, let body)): done(status, body)
            case .failure(let e):
                if let failed { failed("\(url): \(e.description)") } else { fail("\(url): \(e.description)") }
            }
        }
    }

    /// A call with the transmitter's credential; nothing after `stop`.
    private func authorized(
        _ url: String, body: JSONValue?, method: String?, timeout: Double,
        done: @escaping (Result<(Int, [UInt8]), FetchError>) -> Void
    ) {
        authorize { [self] authorization in
            guard !stopped else { return }
            var headers = ["Accept: application/json"]
            if let authorization { headers.append("Authorization: \(authorization)") }
            var payload: [UInt8]?
            if let body {
                headers.append("Content-Type: application/json")
                payload = Array(JSONSerializer.serialize(body).utf8)
            }
            let request = FetchRequest(
                url: url, body: payload, headers: headers, timeout: timeout, maxResponseBytes: 1 << 20, method: method)
            fetcher.fetch(request) { [self] result in
                guard !stopped else { return }
                done(result.map { ($0.status, $0.body) })
            }
        }
    }

    private func fail(_ why: String) {
        guard !stopped else { return }
        log.warning("ssf stream not up", metadata: ["transmitter": .string(config.name), "error": .string(why)])
        hub.update(config.name) {
            $0.lastError = why
            if $0.streamID == nil { $0.status = "not yet up" }
        }
        let delay = retryDelay
        retryDelay = min(retryDelay * 2, 60)
        timer = LoopTimer(loop: loop, seconds: delay, repeating: false) { [weak self] in self?.discover() }
    }
}

/// A transmitter's configuration metadata (SSF 1.0 §7.1), what a receiver needs of it.
struct TransmitterMetadata: Sendable {
    var jwksURI: String
    var configurationEndpoint: String
    var verificationEndpoint: String?

    /// Whether the issuer was a plain-text loopback one: only then may its endpoints be http.
    var plainAllowed = false

    /// Whether `url` may carry the gateway's credential: https, or http only when the issuer
    /// itself is a loopback one (an https transmitter cannot send it to a local plain port).
    func allows(_ url: String) -> Bool {
        TransmitterConfig.securedURL(url) != nil && (plainAllowed || url.hasPrefix("https://"))
    }

    static func parse(
        _ response: FetchResponse, issuer: String, delivery: TransmitterConfig.Delivery = .push,
        profile: TransmitterConfig.Profile = .ssf
    ) -> Result<TransmitterMetadata, MetadataError> {
        guard response.status == 200 else { return .failure(.init("answered \(response.status)")) }
        guard let o = (try? JSONParser.parse(response.body))?.object else {
            return .failure(.init("not a JSON object"))
        }
        // §7.2.3: the metadata's issuer is the one it was fetched for.
        guard o["issuer"]?.string.map({ $0.hasSuffix("/") ? String($0.dropLast()) : $0 }) == issuer else {
            return .failure(.init("its issuer is not \(issuer)"))
        }
        // http only when the issuer itself is a loopback one: an https transmitter's metadata
        // cannot send the gateway's credential to a local plain-text port.
        let plainAllowed = issuer.hasPrefix("http://")
        func url(_ name: String) -> String? {
            guard let s = o[name]?.string, TransmitterConfig.securedURL(s) != nil,
                plainAllowed || s.hasPrefix("https://")
            else { return nil }
            return s
        }
        guard let jwks = url("jwks_uri") else { return .failure(.init("no https jwks_uri")) }
        if profile == .googleRISC {
            // Google's document names its own endpoints (`update_configuration_endpoint`), and a
            // push method URI of its own.
            guard let update = url("update_configuration_endpoint") else {
                return .failure(.init("no https update_configuration_endpoint: the stream cannot be set"))
            }
            return .success(
                TransmitterMetadata(
                    jwksURI: jwks, configurationEndpoint: update, verificationEndpoint: url("verification_endpoint"),
                    plainAllowed: plainAllowed))
        }
        guard let configuration = url("configuration_endpoint") else {
            return .failure(.init("no https configuration_endpoint: streams cannot be made"))
        }
        if let methods = o["delivery_methods_supported"]?.array, !methods.contains(.string(delivery.method)) {
            return .failure(.init("\(delivery.rawValue) delivery (\(delivery.method)) is not supported"))
        }
        return .success(
            TransmitterMetadata(
                jwksURI: jwks, configurationEndpoint: configuration, verificationEndpoint: url("verification_endpoint"),
                plainAllowed: plainAllowed))
    }

    struct MetadataError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
