/// The authorization response at the redirect URI (RFC 6749 §4.1.2 and §4.1.2.1), judged
/// against the pending login it must answer.
public enum AuthorizationResponse: Equatable, Sendable {
    case code(String, state: String)
    /// The AS refused or the user declined: shown on a plain page, never retried in a loop.
    case error(String, description: String?, state: String?)

    public enum Failure: Error, Equatable, Sendable {
        case malformed(String)
        /// RFC 9207 §2.4: `iss` missing where the AS promised it, or naming another issuer
        /// (a mix-up attack).
        case issuerMismatch
    }

    /// Parses the callback's query. Every parameter at most once (a duplicate is an
    /// injection attempt, RFC 6749 §3.1). `expectedIssuer`: checked when the response
    /// carries `iss`, and required when `issRequired` (the metadata says the AS sends it).
    public static func parse(query: Substring, expectedIssuer: String, issRequired: Bool) -> Result<
        AuthorizationResponse, Failure
    > {
        guard let pairs = FormEncoding.decode(query) else {
            return .failure(.malformed("the callback query is not well-formed"))
        }
        return parse(parameters: pairs, expectedIssuer: expectedIssuer, issRequired: issRequired)
    }

    /// As `parse(query:…)`, for parameters already decoded (the claims of a verified JARM
    /// response JWT).
    public static func parse(parameters pairs: [(String, String)], expectedIssuer: String, issRequired: Bool)
        -> Result<AuthorizationResponse, Failure>
    {
        var values: [String: String] = [:]
        for (name, value) in pairs {
            guard values[name] == nil else { return .failure(.malformed("\(name) appears more than once")) }
            values[name] = value
        }
        if let iss = values["iss"] {
            guard iss == expectedIssuer else { return .failure(.issuerMismatch) }
        } else if issRequired {
            return .failure(.issuerMismatch)
        }
        if let error = values["error"] {
            return .success(.error(error, description: values["error_description"], state: values["state"]))
        }
        guard let code = values["code"], !code.isEmpty else { return .failure(.malformed("the callback has no code")) }
        guard let state = values["state"], !state.isEmpty else {
            return .failure(.malformed("the callback has no state"))
        }
        return .success(.code(code, state: state))
    }
}
