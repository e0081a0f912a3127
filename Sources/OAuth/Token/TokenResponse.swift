import JOSE

/// A successful token response (RFC 6749 §5.1, OIDC Core §3.1.3.3), or the error the AS gave
/// (RFC 6749 §5.2).
public struct TokenResponse: Sendable, Equatable {
    public let accessToken: String
    /// "Bearer" or "DPoP" (RFC 9449 §5), as the AS said.
    public let tokenType: String
    public let expiresIn: Int64?
    public let refreshToken: String?
    public let idToken: String?
    public let scope: String?

    /// `token_type` is DPoP (RFC 9449 §5); the type's name is case-insensitive (RFC 6749 §5.1).
    public var isDPoPBound: Bool { tokenType.lowercased() == "dpop" }

    /// RFC 6749 §7.1: a client uses only a token type it understands, here the one it asked
    /// for — DPoP when it sent a proof (RFC 9449 §5: an AS that does not bind answers
    /// Bearer, and a DPoP client must not take that as bound), else Bearer.
    public func hasType(dpop: Bool) -> Bool {
        dpop ? isDPoPBound : tokenType.lowercased() == "bearer"
    }

    public struct Failure: Error, Equatable, Sendable {
        /// The AS's `error` code, e.g. invalid_grant; "invalid_response" when the body is unusable.
        public let error: String
        public let status: Int
        public init(error: String, status: Int) {
            self.error = error
            self.status = status
        }
    }

    public static func parse(status: Int, body: [UInt8]) -> Result<TokenResponse, Failure> {
        let object = try? JSONParser.parseObject(body, what: "the token response")
        guard status == 200 else {
            return .failure(Failure(error: object?["error"]?.string ?? "invalid_response", status: status))
        }
        // RFC 6750 §2.1: the token goes out as `Authorization: Bearer <b64token>` (to a PDP,
        // to userinfo, to an upstream); anything else, a CR/LF above all, is no token.
        guard let object, let access = object["access_token"]?.string, BearerTokenExtractor.isB64Token(access),
            let type = object["token_type"]?.string
        else {
            return .failure(Failure(error: "invalid_response", status: status))
        }
        return .success(
            TokenResponse(
                accessToken: access, tokenType: type, expiresIn: object["expires_in"]?.int64,
                refreshToken: object["refresh_token"]?.string, idToken: object["id_token"]?.string,
                scope: object["scope"]?.string))
    }
}
