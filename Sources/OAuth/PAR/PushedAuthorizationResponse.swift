import JOSE

/// The AS's answer to a pushed authorization request (RFC 9126 §2.2): 201 with `request_uri`
/// and `expires_in`, or an error (§2.3).
public struct PushedAuthorizationResponse: Sendable, Equatable {
    public let requestURI: String
    public let expiresIn: Int64

    public static func parse(status: Int, body: [UInt8]) throws -> PushedAuthorizationResponse {
        let object = try? JSONParser.parseObject(body, what: "the PAR response")
        guard status == 201 || status == 200 else {
            let error = object?["error"]?.string ?? "HTTP \(status)"
            throw JOSEError(.malformed, claim: "error", "the PAR endpoint refused the request: \(error)")
        }
        guard let object, let uri = object["request_uri"]?.string, !uri.isEmpty,
            let expires = object["expires_in"]?.int64, expires > 0
        else {
            throw JOSEError(.malformed, claim: "request_uri", "the PAR response has no request_uri and expires_in")
        }
        return PushedAuthorizationResponse(requestURI: uri, expiresIn: expires)
    }
}
