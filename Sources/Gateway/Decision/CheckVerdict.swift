import ExtAuthz
import Reactor

/// A decision as an ext_authz `CheckResponse` (Envoy's gRPC authorization service): the
/// same verdict the HTTP forms give, in the message Envoy applies.
enum CheckVerdict {
    /// Allowed: Envoy sends the request on with the changes a proxied request gets.
    ///   - identity: the route's identity headers, set over any copy
    ///     (OVERWRITE_IF_EXISTS_OR_ADD: a client's forged copy is never appended to).
    ///   - fields: the judged request's (lower-case, as the CheckRequest gave them); each
    ///     one a proxied request would not pass
    ///     (`rule`: a client's copy of an identity header, a credential the route keeps, a
    ///     name with `_`, the reserved prefix, what only a trusted proxy may send) is
    ///     removed, but the fields Envoy sets itself (`envoySets`). The gateway's own
    ///     cookies are taken out of `cookie`, which is set to what is left, or removed.
    ///   - responseFields: fields for the client's answer (a refreshed session's
    ///     Set-Cookie, a fresh DPoP-Nonce).
    static func allowed(
        identity: [(String, String)], fields: [CheckAttributes.Field], rule: RouteResolver.ClientFieldRule,
        responseFields: [(String, String)]
    ) -> [UInt8] {
        var set = identity.map { (name: $0.0.lowercased(), value: $0.1) }
        var remove: [String] = []
        var cookies: [String] = []
        // A handful of names each: arrays, not sets.
        for field in fields {
            guard !rule.keeps(field.name.utf8.span), !envoySets.contains(field.name) else { continue }
            if field.name == "cookie" {
                cookies.append(field.value)
            } else if !set.contains(where: { $0.name == field.name }) && !remove.contains(field.name) {
                // Never both set and removed: Envoy removes after it sets.
                remove.append(field.name)
            }
        }
        if !cookies.isEmpty {
            // A let-through CORS preflight carries no cookie at all (Fetch §3.2.2), as in proxy mode.
            let kept = rule.preflight ? [] : cookies.compactMap { CookieFilter.without(rule.ownCookies, $0) }
            if kept.isEmpty {
                remove.append("cookie")
            } else {
                // RFC 9113 §8.2.3: cookie crumbs are one field once joined with "; ".
                set.append((name: "cookie", value: kept.joined(separator: "; ")))
            }
        }
        return CheckResponseWriter.allowed(
            set: set, remove: remove,
            // A verdict is never cached: the session stage's own Cache-Control, meant for an
            // upstream answer, is not the client's.
            responseFields: responseFields.filter { $0.0 != "Cache-Control" }.map { (name: $0.0, value: $0.1) })
    }

    /// Fields a proxied request's upstream gets from the gateway, which Envoy sets for its
    /// own upstream request (Host; X-Forwarded-For and -Proto; X-Request-Id; framing): a
    /// client's copy never reaches the upstream through Envoy either. `forwarded` and
    /// `x-forwarded-host` are not among them: Envoy sets neither by default, so a client's
    /// copies are removed.
    static let envoySets: Set<String> = [
        "host", "content-length", "x-forwarded-for", "x-forwarded-proto", "x-request-id", "expect"
    ]

    /// Refused, or the gateway cannot judge: the answer a proxied request would have got
    /// (status, fields, body), which Envoy sends the client.
    ///   - `outage` (a store, key server or AS that cannot be reached): an
    ///     `error_response` with UNAVAILABLE, so that Envoy's `failure_mode_allow` and
    ///     `status_on_error` decide. Never for what a client can cause: with
    ///     `failure_mode_allow`, Envoy would let its request through;
    ///   - 401 and a login redirect: UNAUTHENTICATED;
    ///   - any other refusal: PERMISSION_DENIED.
    static func denied(_ response: GatewayResponse, requestID: String, outage: Bool) -> [UInt8] {
        var fields: [(name: String, value: String)] = []
        response.forEachField { fields.append((name: $0, value: $1)) }
        fields.append((name: "X-Request-Id", value: requestID))
        let code: CheckResponseWriter.Code
        switch response.status {
        case _ where outage: code = .unavailable
        case 401, 302: code = .unauthenticated
        default: code = .permissionDenied
        }
        return CheckResponseWriter.denied(
            code, message: response.problem?.description ?? "", httpStatus: response.status, fields: fields,
            body: response.body, asError: outage)
    }
}
