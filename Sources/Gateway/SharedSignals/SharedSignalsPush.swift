import Foundation
import JOSE
import OAuth
import Reactor

/// A transmitter's push endpoint (RFC 8935) at its `endpoint_url`'s path, on every public
/// listener: `POST` of one SET as `application/secevent+jwt`, with the `Authorization` the
/// stream was given (compared in constant time), a body of at most 64 KB. 202 with no body
/// once the event is applied (a SET applied before, or of a type without effect, too); else
/// 400 with RFC 8935 §2.3's `{"err", "description"}`, and nothing changes.
struct SharedSignalsPush {
    /// Unowned: the services outlive every request.
    unowned(unsafe) let services: WorkerServices
    let hub: SharedSignalsHub

    static let mediaType = "application/secevent+jwt"

    func handle(_ request: RoutedRequest, transmitter name: String) -> StageOutcome {
        let ctx = request.context
        guard let t = hub.transmitter(named: name) else {
            return .answer(Self.refusal(.accessDenied, "this receiver has no such stream", ctx))
        }
        guard request.head.method == .POST else {
            var r = GatewayResponse(status: 405, headers: [("Allow", "POST")], body: "", contentType: "text/plain")
            r.detail = "ssf push: \(request.head.methodName)"
            return .answer(r)
        }
        let fields = request.head.fields
        // RFC 8935 §2: the transmitter authenticates as the stream said, before anything of
        // the request is read; the value is this receiver's secret, so the compare takes the
        // same time whatever it holds.
        let (authorization, count) = fields.firstAndCount("Authorization")
        guard count == 1, let authorization, ConstantTime.equals(authorization, t.pushAuthorization) else {
            hub.refused(name)
            return .answer(
                Self.refusal(.authenticationFailed, "the request does not carry the stream's credential", ctx))
        }
        let mediaType = fields.first("Content-Type").map {
            String($0.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard fields.firstAndCount("Content-Type").count == 1, mediaType == Self.mediaType else {
            hub.refused(name)
            return .answer(Self.refusal(.invalidRequest, "the body must be one SET as \(Self.mediaType)", ctx))
        }
        services.readOwnBody(request.exchange, ctx, limit: SecurityEventTokenVerifier.maxSize) { body in
            let token = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            verify(token, t, request, retried: false)
        }
        return .suspend
    }

    /// Verifies with the keys at hand; a SET whose `kid` they lack gets one refetch (the
    /// transmitter may have rotated), then the answer.
    private func verify(_ token: String, _ t: SharedSignalsHub.Transmitter, _ request: RoutedRequest, retried: Bool) {
        let ctx = request.context
        let name = t.config.name
        guard let keys = hub.transmitter(named: name)?.keys else {
            // The stream is not up yet: the transmitter tries again (RFC 8935 §2.3 lets a
            // receiver answer 5xx for what it cannot judge now).
            ctx.rejection = .unavailable(.keysNotLoaded)
            request.answer(
                ErrorResponse.make(
                    503, error: "temporarily_unavailable", description: "the transmitter's keys are not loaded yet",
                    requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: "ssf push: no keys for \(name)"))
            return
        }
        let now = services.wallClock.now
        let set: SecurityEventToken
        do {
            set = try t.verifier.verify(token, keys: keys, now: Int64(now))
        } catch {
            if error.code == .invalidKey, !retried, let refetch = hub.refetchKeys,
                let kid = try? CompactJWS(token, maxSize: SecurityEventTokenVerifier.maxSize).header.kid,
                !keys.keys.contains(where: { $0.kid == kid })
            {
                let loop = services.loop
                refetch(name) { _ in loop.execute { verify(token, t, request, retried: true) } }
                return
            }
            hub.refused(name)
            request.answer(Self.refusal(error.code, error.description, ctx))
            return
        }
        if set.event.type == .verification, let state = set.event.state, !hub.expectsState(state, of: name) {
            hub.refused(name)
            request.answer(
                Self.refusal(err: "invalid_state", "the verification event's state is not the one asked for", ctx))
            return
        }
        // With a Redis store, written to its log before the 202: a revocation answered for
        // stands on every replica and outlives this process.
        guard let log = services.revocationLog, let record = hub.record(for: set, from: name, now: now) else {
            return request.answer(Self.accepted(set, hub.apply(set, from: name, now: now)))
        }
        log.append(record) { [hub] appended in
            let now = services.wallClock.now
            switch appended {
            case .stored: request.answer(Self.accepted(set, hub.apply(set, from: name, now: now)))
            case .duplicate: request.answer(Self.accepted(set, hub.duplicate(set, from: name, now: now)))
            case .failed(let why):
                // RFC 8935 §2.3 lets the receiver fail for what it cannot do now: the
                // transmitter pushes again, and nothing was applied meanwhile.
                ctx.rejection = .unavailable(.revocationNotStored)
                request.answer(
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable", description: "the event cannot be stored now",
                        requestID: ctx.requestID, headers: [("Retry-After", "1")],
                        detail: "ssf push: the store failed: \(why)"))
            }
        }
    }

    private static func accepted(_ set: SecurityEventToken, _ result: SharedSignalsHub.Result) -> GatewayResponse {
        var r = GatewayResponse(status: 202, body: "", contentType: "text/plain")
        r.detail = "ssf push: \(set.event.uri) \(result.rawValue) (jti \(String(set.jti.prefix(64))))"
        return r
    }

    static func refusal(_ code: SETRefusal.Code, _ description: String, _ ctx: RequestContext) -> GatewayResponse {
        refusal(err: code.rawValue, description, ctx)
    }

    /// RFC 8935 §2.3: 400, a JSON object with `err` and `description`, in English.
    static func refusal(err: String, _ description: String, _ ctx: RequestContext) -> GatewayResponse {
        let body = JSONSerializer.serialize(
            .object(JSONObject(["err": .string(err), "description": .string(description)])))
        var r = GatewayResponse(
            status: 400, headers: [("Content-Language", "en")], body: body, contentType: "application/json")
        r.detail = "ssf push refused: \(err): \(description)"
        r.reason = err
        return r
    }
}
