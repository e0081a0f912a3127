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
    ///     name with `_`, the reserved prefix) is removed. Fields Envoy sets itself
    ///     (X-Forwarded-*, X-Request-Id, Host) are left to it. The gateway's own cookies
    ///     are taken out of `cookie`, which is set to what is left, or removed.
    ///   - responseFields: fields for the client's answer (a refreshed session's
    ///     Set-Cookie, a fresh DPoP-Nonce).
    static func allowed(
        identity: [(String, String)], fields: [CheckAttributes.Field], rule: RequestPipeline.ClientFieldRule,
        responseFields: [(String, String)]
    ) -> [UInt8] {
        var set = identity.map { (name: $0.0.lowercased(), value: $0.1) }
        var remove: [String] = []
        var cookies: [String] = []
        // A handful of names each: arrays, not sets.
        for field in fields {
            let name = field.name.utf8.span
            guard !rule.keeps(name), !rule.names.lists(name).contains(.recomputedOnRequest) else { continue }
            if field.name == "cookie" {
                cookies.append(field.value)
            } else if !set.contains(where: { $0.name == field.name }) && !remove.contains(field.name) {
                // Never both set and removed: Envoy removes after it sets.
                remove.append(field.name)
            }
        }
        if !cookies.isEmpty {
            let kept = cookies.compactMap { CookieFilter.without(rule.ownCookies, $0) }
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

    /// Refused, or the gateway cannot judge: the answer a proxied request would have got
    /// (status, fields, body), which Envoy sends the client.
    ///   - 401 and a login redirect: UNAUTHENTICATED;
    ///   - 5xx (a store or key server that cannot be reached): an `error_response` with
    ///     UNAVAILABLE, so that Envoy's `failure_mode_allow` and `status_on_error` decide;
    ///   - any other refusal: PERMISSION_DENIED.
    static func denied(_ response: GatewayResponse, requestID: String) -> [UInt8] {
        var fields: [(name: String, value: String)] = []
        response.forEachField { fields.append((name: $0, value: $1)) }
        fields.append((name: "X-Request-Id", value: requestID))
        let code: CheckResponseWriter.Code
        switch response.status {
        case 401, 302: code = .unauthenticated
        case 500...: code = .unavailable
        default: code = .permissionDenied
        }
        return CheckResponseWriter.denied(
            code, message: response.problem?.description ?? "", httpStatus: response.status, fields: fields,
            body: response.body, asError: response.status >= 500)
    }
}
