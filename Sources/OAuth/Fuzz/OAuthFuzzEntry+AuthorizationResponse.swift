import JOSE

/// `AuthorizationResponse` and `FormEncoding`: the login callback's query (RFC 6749 §4.1.2),
/// and a JARM `response` JWT in it.
extension OAuthFuzzEntry {
    /// The issuer the fuzzed responses must name (RFC 9207).
    public static let expectedIssuer = "https://as.example"

    /// - the form decoding is exact: its pairs, encoded again, decode to the same pairs, and
    ///   each name and value is what a plain percent-decoder makes of the text;
    /// - `AuthorizationResponse.parse` decides as RFC 6749 §4.1.2 and §3.1, and RFC 9207 §2.4
    ///   say, on those pairs: refused if malformed or any parameter appears twice; then the
    ///   `iss` check; then an `error` response; otherwise exactly one non-empty `code` and
    ///   one non-empty `state`, which are the ones returned.
    public static func authorizationResponse(_ query: Substring, issRequired: Bool) {
        let pairs = FormEncoding.decode(query)
        if let pairs { checkFormDecoding(query, pairs) }
        let got = AuthorizationResponse.parse(query: query, expectedIssuer: expectedIssuer, issRequired: issRequired)
        for (name, value) in pairs ?? [] where name == "response" { jarmResponse(value) }
        let want = expectedResponse(pairs, issRequired: issRequired)
        switch (got, want) {
        case (.success(let g), .success(let w)):
            fuzzInvariant(g == w, "authorization response: accepted with other values than the query's")
        case (.failure(.issuerMismatch), .failure(.issuerMismatch)), (.failure(.malformed), .failure(.malformed)):
            break
        default:
            fatalError("authorization response: decided otherwise than RFC 6749 §4.1.2 and RFC 9207")
        }
    }

    /// A key no fuzzer input is signed with.
    static let jarmKeys = JWKSet(keys: [try! JWK.generate(for: .ES256, kid: "as-1")])

    /// A JARM `response` value: its state is peeked without a crash, and it never verifies
    /// (nothing the fuzzer writes carries a signature by `jarmKeys`, and `none` is refused).
    static func jarmResponse(_ response: String) {
        _ = JARMResponse.unverifiedState(response)
        let verified = try? JARMResponse.verify(
            response, issuer: expectedIssuer, clientID: "app1", keys: jarmKeys, algorithms: [.ES256, .PS256],
            leeway: 30, now: 1_800_000_000)
        fuzzInvariant(verified == nil, "JARM: a response verified without the AS's signature")
    }

    /// The rules, in their order, from the decoded pairs.
    private static func expectedResponse(_ pairs: [(String, String)]?, issRequired: Bool) -> Result<
        AuthorizationResponse, AuthorizationResponse.Failure
    > {
        guard let pairs else { return .failure(.malformed("")) }
        let names = pairs.map(\.0)
        guard Set(names).count == names.count else { return .failure(.malformed("")) }
        func value(_ name: String) -> String? { pairs.first { $0.0 == name }?.1 }
        if let iss = value("iss") {
            guard iss == expectedIssuer else { return .failure(.issuerMismatch) }
        } else if issRequired {
            return .failure(.issuerMismatch)
        }
        if let error = value("error") {
            return .success(.error(error, description: value("error_description"), state: value("state")))
        }
        guard let code = value("code"), !code.isEmpty, let state = value("state"), !state.isEmpty else {
            return .failure(.malformed(""))
        }
        return .success(.code(code, state: state))
    }

    private static func checkFormDecoding(_ query: Substring, _ pairs: [(String, String)]) {
        let again = FormEncoding.decode(Substring(FormEncoding.body(pairs)))
        fuzzInvariant(
            again.map { $0.elementsEqual(pairs) { $0 == $1 } } == true, "form encoding: pairs do not survive encoding")
        let fields = query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
        fuzzInvariant(fields.count == pairs.count, "form encoding: a pair gained or lost")
        for (field, pair) in zip(fields, pairs) {
            let eq = field.firstIndex(of: UInt8(ascii: "=")) ?? field.endIndex
            let name = formDecoded(field[..<eq])
            let value = eq == field.endIndex ? [] : formDecoded(field[field.index(after: eq)...])
            fuzzInvariant(
                Array(pair.0.utf8) == name && Array(pair.1.utf8) == value, "form encoding: a pair decodes otherwise")
        }
    }

    /// application/x-www-form-urlencoded's byte rules: "+" is a space, then `%XX` decoded.
    private static func formDecoded(_ bytes: Substring.UTF8View.SubSequence) -> [UInt8] {
        percentDecoded(bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 })
    }
}
