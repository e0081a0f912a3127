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

/// The `Authorization` fields of a request, as the extractor needs them: how many there
/// were, and what the first one says. Filled from the field bytes in place, so a request
/// costs no `String` per field and none for a scheme.
public struct AuthorizationFields: Sendable {
    public private(set) var count = 0
    /// The first field parsed: nil when it is not a Bearer or DPoP credential.
    var first: PresentedCredential?

    public init() {}

    /// One more `Authorization` field's value bytes.
    public mutating func add(_ value: Span<UInt8>) {
        count += 1
        if count == 1 { first = value.withUnsafeBufferPointer { BearerTokenExtractor.parseAuthorization(bytes: $0) } }
    }
}

/// Extracts the access token from the parts of a request (RFC 6750 §2.1–2.3).
public enum BearerTokenExtractor {
    /// - authorization: every `Authorization` header value (several is an error).
    /// - formToken / queryToken: `access_token` values found there (already decoded).
    public static func extract(
        authorization: [String], formTokens: [String] = [], queryTokens: [String] = [],
        sources: TokenSources = TokenSources()
    ) -> PresentedCredential {
        var fields = AuthorizationFields()
        for value in authorization { fields.add(value.utf8.span) }
        return extract(authorization: fields, formTokens: formTokens, queryTokens: queryTokens, sources: sources)
    }

    public static func extract(
        authorization: AuthorizationFields, formTokens: [String] = [], queryTokens: [String] = [],
        sources: TokenSources = TokenSources()
    ) -> PresentedCredential {
        // The first credential found, and how many there were (no array for the one).
        var found: PresentedCredential?
        var n = 0
        func add(_ c: PresentedCredential) {
            n += 1
            if n == 1 { found = c }
        }
        if authorization.count > 1 { return .invalid(reason: "more than one Authorization header") }
        if authorization.count == 1 {
            guard let c = authorization.first else {
                return .invalid(reason: "the Authorization header is not a Bearer or DPoP credential")
            }
            add(c)
        }
        if !formTokens.isEmpty {
            guard sources.formBody else {
                return .invalid(reason: "access_token in the body is not accepted on this route")
            }
            for t in formTokens { add(isB64Token(t) ? .bearer(t) : .invalid(reason: "malformed access_token")) }
        }
        if !queryTokens.isEmpty {
            guard sources.query else {
                return .invalid(reason: "access_token in the query is not accepted on this route")
            }
            for t in queryTokens { add(isB64Token(t) ? .bearer(t) : .invalid(reason: "malformed access_token")) }
        }
        if n > 1 { return .invalid(reason: "more than one access token in the request") }
        return found ?? .none
    }

    /// `Bearer <b64token>` or `DPoP <b64token>`; the scheme is case-insensitive (RFC 9110
    /// §11.1), exactly one space-separated token follows.
    static func parseAuthorization(_ value: String) -> PresentedCredential? {
        var value = value
        return value.withUTF8 { parseAuthorization(bytes: $0) }
    }

    /// As `parseAuthorization(_:)`, over the field's bytes. The schemes are compared in
    /// ASCII case: no other letter lowercases to one of "bearer" or "dpop" (only the Kelvin
    /// sign lowercases to an ASCII letter, "k").
    static func parseAuthorization(bytes value: UnsafeBufferPointer<UInt8>) -> PresentedCredential? {
        guard let space = value.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let scheme = UnsafeBufferPointer(rebasing: value[..<space])
        var start = space + 1
        while start < value.count && value[start] == UInt8(ascii: " ") { start += 1 }
        let token = UnsafeBufferPointer(rebasing: value[start...])
        let isDPoP = equalsIgnoringASCIICase(scheme, "dpop")
        guard isB64Token(bytes: token) else {
            return .invalid(reason: "malformed \(isDPoP ? "DPoP" : "Bearer") token")
        }
        if isDPoP { return .dpop(String(decoding: token, as: UTF8.self)) }
        if equalsIgnoringASCIICase(scheme, "bearer") { return .bearer(String(decoding: token, as: UTF8.self)) }
        return nil
    }

    /// `bytes` is `lower` (lowercase ASCII) in any ASCII case.
    static func equalsIgnoringASCIICase(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        for i in 0..<bytes.count {
            let c = bytes[i] >= 0x41 && bytes[i] <= 0x5a ? bytes[i] | 0x20 : bytes[i]
            if c != lower.utf8Start[i] { return false }
        }
        return true
    }

    /// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    public static func isB64Token(_ s: String) -> Bool {
        // Over the contiguous bytes: iterating a String's UTF-8 view index by index cost
        // about 30 instructions per byte, 27,000 for a typical JWT on every request.
        var s = s
        return s.withUTF8(isB64Token(bytes:))
    }

    static func isB64Token(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // The token characters, then only "=": eight bytes at a time through a table (about
        // 3 instructions a byte; a token is kilobytes, checked on every request).
        b64TokenByte.withUnsafeBufferPointer { t in
            let n = bytes.count
            var i = 0
            while i + 8 <= n {
                let all =
                    t[Int(bytes[i])] & t[Int(bytes[i + 1])] & t[Int(bytes[i + 2])] & t[Int(bytes[i + 3])]
                    & t[Int(bytes[i + 4])] & t[Int(bytes[i + 5])] & t[Int(bytes[i + 6])] & t[Int(bytes[i + 7])]
                if all == 0 { break }
                i += 8
            }
            while i < n && t[Int(bytes[i])] != 0 { i += 1 }
            guard i > 0 else { return false }
            while i < n && bytes[i] == UInt8(ascii: "=") { i += 1 }
            return i == n
        }
    }

    /// 1 for the b64token characters (ALPHA, DIGIT, "-", ".", "_", "~", "+", "/"), else 0.
    private static let b64TokenByte: [UInt8] = (0..<256).map { c in
        switch UInt8(c) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            return 1
        default: return 0
        }
    }
}
