import Foundation
import JOSE

/// A Google service account's key file (the JSON the Cloud console gives), as Google's RISC
/// management API wants its callers: each call carries a JWT the gateway signs with the
/// account's key (`iss` and `sub` the account's email, `aud` the RISC management service,
/// an hour's life, `kid` the key's id), not a token from an authorization server.
struct GoogleServiceAccount: Sendable {
    let email: String
    let keyID: String
    let key: JWK

    /// The file's `client_email`, `private_key_id` and `private_key` (an RSA PEM), or why not.
    static func read(_ path: String) -> Result<GoogleServiceAccount, ConfigFileError> {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 64 << 10 else {
            return .failure(.init("cannot read \(path), or it is over 64 KB"))
        }
        guard let o = (try? JSONParser.parse(Array(data)))?.object else {
            return .failure(.init("\(path) is not a JSON object"))
        }
        guard let email = o["client_email"]?.string, !email.isEmpty, let keyID = o["private_key_id"]?.string,
            let pem = o["private_key"]?.string
        else {
            return .failure(.init("\(path) needs client_email, private_key_id and private_key"))
        }
        guard let key = try? JWK(pem: pem, kid: keyID, alg: "RS256"), key.kty == "RSA", key.isPrivate else {
            return .failure(.init("\(path)'s private_key is not an RSA private key in PEM"))
        }
        return .success(GoogleServiceAccount(email: email, keyID: keyID, key: key))
    }

    /// A token for the management API, good for an hour from `now`.
    func token(now: Int64) -> String? {
        var claims = JSONObject()
        claims["iss"] = .string(email)
        claims["sub"] = .string(email)
        claims["aud"] = .string(TransmitterConfig.Profile.googleManagementAudience)
        claims["iat"] = .number(String(now))
        claims["exp"] = .number(String(now + Self.lifetime))
        var header = JSONObject()
        header["kid"] = .string(keyID)
        header["typ"] = .string("JWT")
        return try? JWSSigner.sign(claims: claims, header: header, alg: .RS256, key: key)
    }

    static let lifetime: Int64 = 3600

    struct ConfigFileError: Error {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
