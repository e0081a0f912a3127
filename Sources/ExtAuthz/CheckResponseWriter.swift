import SwiftProtobuf

/// Writes a `CheckResponse` (ext_authz v3) as a gRPC message's bytes: an allowed request
/// with the header changes the proxy applies before forwarding it, or a refusal with the
/// HTTP answer the proxy sends the client instead.
public enum CheckResponseWriter {
    /// gRPC status codes a decision carries (google.rpc.Code).
    public enum Code: Int32, Sendable {
        case ok = 0
        case invalidArgument = 3
        case permissionDenied = 7
        case unavailable = 14
        case unauthenticated = 16
    }

    /// Allowed (`status` OK, an `OkHttpResponse`). `set`: request fields the upstream gets,
    /// replacing any copy (OVERWRITE_IF_EXISTS_OR_ADD: a client's forged identity header is
    /// never appended to); `remove`: request fields taken out (the client's credentials, its
    /// copies of identity headers); `responseFields`: fields added to the client's answer
    /// (a refreshed session's Set-Cookie, a new DPoP-Nonce).
    public static func allowed(
        set: [(name: String, value: String)], remove: [String], responseFields: [(name: String, value: String)]
    ) -> [UInt8] {
        var ok = Envoy_Service_Auth_V3_OkHttpResponse()
        ok.headers = set.map { option($0.name, $0.value, .overwriteIfExistsOrAdd) }
        ok.headersToRemove = remove
        ok.responseHeadersToAdd = responseFields.map { option($0.name, $0.value, .appendIfExistsOrAdd) }
        var response = Envoy_Service_Auth_V3_CheckResponse()
        response.status = status(.ok, "")
        response.okResponse = ok
        return serialize(response)
    }

    /// Refused (`status` not OK, a `DeniedHttpResponse` with the answer the client gets):
    /// or, with `asError`, the same answer as an `error_response`, which the proxy treats
    /// as the authorization service failing (so its `failure_mode_allow` and
    /// `status_on_error` apply: a store outage, not a verdict).
    public static func denied(
        _ code: Code, message: String, httpStatus: Int, fields: [(name: String, value: String)], body: String,
        asError: Bool = false
    ) -> [UInt8] {
        var denied = Envoy_Service_Auth_V3_DeniedHttpResponse()
        var status = Envoy_Type_V3_HttpStatus()
        status.code = Int32(clamping: httpStatus)
        denied.status = status
        // RFC 9110 §5.3: one field line per value; the client's answer is built afresh.
        denied.headers = fields.map { option($0.name, $0.value, .appendIfExistsOrAdd) }
        denied.body = body
        var response = Envoy_Service_Auth_V3_CheckResponse()
        response.status = Self.status(code, message)
        if asError { response.errorResponse = denied } else { response.deniedResponse = denied }
        return serialize(response)
    }

    private static func option(
        _ name: String, _ value: String, _ action: Envoy_Config_Core_V3_HeaderValueOption.HeaderAppendAction
    ) -> Envoy_Config_Core_V3_HeaderValueOption {
        var header = Envoy_Config_Core_V3_HeaderValue()
        header.key = name
        header.value = value
        var option = Envoy_Config_Core_V3_HeaderValueOption()
        option.header = header
        option.appendAction = action
        return option
    }

    private static func status(_ code: Code, _ message: String) -> Google_Rpc_Status {
        var status = Google_Rpc_Status()
        status.code = code.rawValue
        status.message = message
        return status
    }

    /// Serializing messages built here cannot fail (no required fields, no `Any`); an empty
    /// message would read as OK with nothing set, so a failure traps instead.
    private static func serialize(_ response: Envoy_Service_Auth_V3_CheckResponse) -> [UInt8] {
        do {
            return try response.serializedBytes()
        } catch {
            preconditionFailure("a CheckResponse did not serialize: \(error)")
        }
    }
}
