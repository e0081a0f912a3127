import OAuth

/// A step-up login (RFC 9470 §4) begun through the start endpoint — a decision's login URL,
/// a "Try again" link — names what it asks in the start URL's query: `acr_values` (space-
/// separated, in order) and `max_age` (seconds), the authorization request's own names (OIDC
/// Core §3.1.2.1). Whoever asks here asks for their own browser's login; the route checks the
/// session it gets against its own requirement whatever was asked.
enum StepUpLogin {
    /// At most this many `acr_values`, together at most `maxBytes` bytes: the pending login
    /// that remembers them may ride in a cookie beside the return address.
    static let maxValues = 10
    static let maxBytes = 512

    /// The query parameters that ask what `stepUp` asks (none for nil).
    static func parameters(_ stepUp: AuthorizationRequirement?) -> [(String, String)] {
        guard let stepUp else { return [] }
        var pairs: [(String, String)] = []
        if !stepUp.acr.isEmpty { pairs.append(("acr_values", stepUp.acr.joined(separator: " "))) }
        if let maxAge = stepUp.maxAge { pairs.append(("max_age", String(maxAge))) }
        return pairs
    }

    enum Parsed: Equatable {
        /// Neither parameter: a first login.
        case none
        case stepUp(AuthorizationRequirement)
        /// A parameter that is not what OIDC Core §3.1.2.1 allows; why.
        case invalid(String)
    }

    /// The step-up a start URL's query asks. `acr_values` are NQCHARs (OIDC Core uses the
    /// RFC 6749 §3.3 scope-token grammar: %x21 / %x23-5B / %x5D-7E); `max_age` a whole
    /// number of seconds, non-negative.
    static func parse(_ query: [(String, String)]) -> Parsed {
        let acr = query.filter { $0.0 == "acr_values" }.map(\.1)
        let maxAge = query.filter { $0.0 == "max_age" }.map(\.1)
        guard acr.count <= 1, maxAge.count <= 1 else { return .invalid("acr_values or max_age repeated") }
        guard !acr.isEmpty || !maxAge.isEmpty else { return .none }
        var asked = AuthorizationRequirement()
        if let text = acr.first {
            let values = text.split(separator: " ").map(String.init)
            guard !values.isEmpty, values.count <= maxValues, text.utf8.count <= maxBytes,
                values.allSatisfy({ $0.utf8.allSatisfy(isNQChar) })
            else { return .invalid("acr_values is not a space-separated list of acr values") }
            asked.acr = values
        }
        if let text = maxAge.first {
            guard !text.isEmpty, text.utf8.count <= 10, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let seconds = Int(text), seconds <= Int(Int32.max)
            else { return .invalid("max_age is not a whole number of seconds") }
            asked.maxAge = seconds
        }
        return .stepUp(asked)
    }

    private static func isNQChar(_ b: UInt8) -> Bool {
        b == 0x21 || (b >= 0x23 && b <= 0x5B) || (b >= 0x5D && b <= 0x7E)
    }
}
