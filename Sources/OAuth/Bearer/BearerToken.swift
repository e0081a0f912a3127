/// Where an access token may come from on a request (RFC 6750 §2). The Authorization
/// header is always allowed; the form body and query only when a route opts in (§2.2,
/// §2.3 — both leak tokens into logs and caches).
public struct TokenSources: Sendable, Equatable {
    public var formBody = false
    public var query = false
    public init(formBody: Bool = false, query: Bool = false) {
        self.formBody = formBody
        self.query = query
    }
}

/// What the request carried, as RFC 6750 §2 reads it.
public enum PresentedCredential: Equatable, Sendable {
    /// No credentials at all: answer with a bare challenge (§3.1: no error code).
    case none
    case bearer(String)
    /// `Authorization: DPoP …` (RFC 9449 §7.1).
    case dpop(String)
    /// Malformed, or more than one credential (§2: "MUST NOT use more than one method").
    case invalid(reason: String)
}

/// Extracts the access token from the parts of a request (RFC 6750 §2.1–2.3).
public enum BearerTokenExtractor {
    /// - authorization: every `Authorization` header value (several is an error).
    /// - formToken / queryToken: `access_token` values found there (already decoded).
    public static func extract(
        authorization: [String], formTokens: [String] = [], queryTokens: [String] = [],
        sources: TokenSources = TokenSources()
    ) -> PresentedCredential {
        var found: [PresentedCredential] = []
        if authorization.count > 1 { return .invalid(reason: "more than one Authorization header") }
        if let header = authorization.first {
            switch parseAuthorization(header) {
            case .some(let c): found.append(c)
            case .none: return .invalid(reason: "the Authorization header is not a Bearer or DPoP credential")
            }
        }
        if !formTokens.isEmpty {
            guard sources.formBody else {
                return .invalid(reason: "access_token in the body is not accepted on this route")
            }
            found.append(
                contentsOf: formTokens.map { isB64Token($0) ? .bearer($0) : .invalid(reason: "malformed access_token") }
            )
        }
        if !queryTokens.isEmpty {
            guard sources.query else {
                return .invalid(reason: "access_token in the query is not accepted on this route")
            }
            found.append(
                contentsOf: queryTokens.map {
                    isB64Token($0) ? .bearer($0) : .invalid(reason: "malformed access_token")
                })
        }
        if found.count > 1 { return .invalid(reason: "more than one access token in the request") }
        return found.first ?? .none
    }

    /// `Bearer <b64token>` or `DPoP <b64token>`; the scheme is case-insensitive (RFC 9110
    /// §11.1), exactly one space-separated token follows.
    static func parseAuthorization(_ value: String) -> PresentedCredential? {
        guard let space = value.firstIndex(of: " ") else { return nil }
        let scheme = value[..<space].lowercased()
        var rest = value[value.index(after: space)...]
        while rest.first == " " { rest = rest.dropFirst() }
        let token = String(rest)
        guard isB64Token(token) else {
            return .invalid(reason: "malformed \(scheme == "dpop" ? "DPoP" : "Bearer") token")
        }
        switch scheme {
        case "bearer": return .bearer(token)
        case "dpop": return .dpop(token)
        default: return nil
        }
    }

    /// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    public static func isB64Token(_ s: String) -> Bool {
        var seenPad = false
        var count = 0
        for c in s.utf8 {
            if c == UInt8(ascii: "=") {
                seenPad = true
                continue
            }
            if seenPad { return false }
            let ok =
                (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)
                || c == 0x2d || c == 0x2e || c == 0x5f || c == 0x7e || c == 0x2b || c == 0x2f
            if !ok { return false }
            count += 1
        }
        return count > 0
    }
}
