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
        // Google's RISC stream has no credential to give: its pushes are judged by their
        // signature, `aud` and `jti` alone.
        let (authorization, count) = fields.firstAndCount("Authorization")
        if t.config.profile == .ssf,
            count != 1 || !ConstantTime.equals(authorization ?? "", t.pushAuthorization)
        {
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
        let intake = SecurityEventIntake(
            hub: hub, log: services.revocationLog, loop: services.loop, wallClock: services.wallClock)
        services.readOwnBody(request.exchange, ctx, limit: SecurityEventTokenVerifier.maxSize) { body in
            let token = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            intake.receive(token, from: name) { outcome in request.answer(Self.answer(outcome, ctx, name)) }
        }
        return .suspend
    }

    private static func answer(_ outcome: SecurityEventIntake.Outcome, _ ctx: RequestContext, _ name: String)
        -> GatewayResponse
    {
        switch outcome {
        case .accepted(let set, let result):
            var r = GatewayResponse(status: 202, body: "", contentType: "text/plain")
            r.detail = "ssf push: \(set.event.uri) \(result.rawValue) (jti \(String(set.jti.prefix(64))))"
            return r
        case .refused(let err, let description):
            return refusal(err: err, description, ctx)
        case .notNow(let reason, let description, let detail):
            // RFC 8935 §2.3 lets a receiver answer 5xx for what it cannot judge now: the
            // transmitter pushes again, and nothing was applied meanwhile.
            ctx.rejection = .unavailable(reason)
            let wait = reason == .keysNotLoaded ? "5" : "1"
            return ErrorResponse.make(
                503, error: "temporarily_unavailable", description: description, requestID: ctx.requestID,
                headers: [("Retry-After", wait)], detail: "ssf push (\(name)): \(detail)")
        }
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
