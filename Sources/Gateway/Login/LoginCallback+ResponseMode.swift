import JOSE
import OAuth

/// Reading the authorization response at the callback in the client's response mode: plain
/// query parameters, or a JARM response JWT (FAPI 2.0 Message Signing §5.4) verified before
/// any parameter in it is believed.
extension LoginCallback {
    /// Why an authorization response was not taken.
    enum ResponseRefusal: Error {
        /// The parameters themselves (RFC 6749 §4.1.2, RFC 9207).
        case response(AuthorizationResponse.Failure)
        /// The response JWT did not verify, or a JWT was expected and not sent.
        case notVerified(String)
        /// The issuer's keys are not loaded: no verdict either way.
        case keysUnavailable(String)
    }

    /// The callback's authorization response, in `client`'s response mode; `done` runs once,
    /// now or after a key refetch.
    func authorizationResponse(
        query: Substring, client: ClientConfig, issuer: IssuerConfig, meta: ProviderMetadata,
        done: @escaping (Result<AuthorizationResponse, ResponseRefusal>) -> Void
    ) {
        // FAPI 2.0 Security Profile §5.3.3.2 item 5: the client checks iss (RFC 9207) whatever
        // the metadata says.
        let issRequired = meta.authorizationResponseIssParameterSupported || client.profile == .fapi2
        guard client.login.responseMode.isJWT else {
            done(
                AuthorizationResponse.parse(
                    query: query, expectedIssuer: issuer.expectedResponseIssuer(query), issRequired: issRequired
                )
                .mapError { .response($0) })
            return
        }
        // JARM §2.3.1: the response is the one `response` parameter. Plain parameters beside it
        // (a code, a state, an error) are not signed and would not be checked: refused, as a
        // response without the JWT is (a downgrade).
        guard let pairs = FormEncoding.decode(query), pairs.count == 1, pairs[0].0 == "response" else {
            done(
                .failure(
                    .notVerified("response_mode \(client.login.responseMode.rawValue): expected only a response JWT")))
            return
        }
        let response = pairs[0].1
        let keys = login.tokens.issuerKeys
        let now = login.now
        // A key the AS has just rotated in: one refetch, as for ID tokens (IssuerKeyResolver).
        keys.verify(
            { () -> Result<[(String, String)], Error> in
                guard let set = keys[issuer: issuer.name] else {
                    return .failure(ResponseRefusal.keysUnavailable("issuer \(issuer.name): keys not loaded"))
                }
                return Result {
                    try JARMResponse.verify(
                        response, issuer: issuer.issuer, clientID: client.authentication.clientID, keys: set,
                        algorithms: issuer.algorithms, leeway: Int64(issuer.leeway), now: now)
                }
            },
            unknownKey: IssuerKeyResolver.missingKey(of: issuer.name),
            done: { outcome in
                switch outcome {
                case .success(let parameters):
                    // The JWT's iss is checked already; RFC 9207's rule still applies to it.
                    done(
                        AuthorizationResponse.parse(
                            parameters: parameters, expectedIssuer: issuer.issuer, issRequired: true
                        ).mapError { .response($0) })
                case .failure(let refusal as ResponseRefusal): done(.failure(refusal))
                case .failure(let error as JOSEError) where error.code == .keyNotFound:
                    // Still unknown after the refetch (or while it is rate-limited): no verdict
                    // on the response; the login is kept for a retry.
                    done(.failure(.keysUnavailable("response JWT: \(error)")))
                case .failure(let error): done(.failure(.notVerified("\(error)")))
                }
            })
    }
}
