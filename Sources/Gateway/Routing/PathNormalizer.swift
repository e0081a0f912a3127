/// The one place request paths are normalized (RFC 3986 §6.2.2): the result is both what
/// the router matches and what the upstream receives, so the gateway never authorizes one
/// path and forwards another.
///
/// - percent-encodings of unreserved characters are decoded (§2.3), others kept with
///   uppercase hex; characters that must be encoded are encoded;
/// - `//` collapses to `/`; `.` and `..` segments are removed (§5.2.4);
/// - refused (400): encoded `/` (`%2F`), `\` raw or encoded, NUL and other control bytes,
///   malformed `%`, a `..` that would climb above the root, `;` raw or encoded (servlet
///   containers and Spring strip `;params`, so `/admin;x` would be `/admin` upstream but
///   not here), more than 32 `..` segments, and any fragment.
enum PathNormalizer {
    struct Normalized: Equatable, Sendable {
        var path: String
        /// Raw query (without "?"), validated, not decoded; nil when absent.
        var query: String?
        /// The path as it stood before each `..` removed a segment; the gateway refuses the
        /// request if a `..` moved it out of the route it was in (see `Router`).
        var dotDotOrigins: [String]
        /// With a `.` or `..` segment: the path as written, its dot segments kept (percent-
        /// decoded). A reader that does not resolve them first sees `/orders/%2e%2e` as
        /// `/orders/{id}`'s path, and `/orders/%2e/x` as `/orders/{id}/x`'s.
        var spelled: String? = nil
    }

    enum Rejection: Error, Equatable, Sendable {
        case notOriginForm, badPercentEncoding, encodedSlash, backslash, controlCharacter,
            escapesRoot, fragment, pathParameter, tooManyDotSegments
    }

    static func normalize(target: String) -> Result<Normalized, Rejection> {
        // Most targets are a normal path alone: then the path is the target itself.
        if isPlainPath(target.utf8.span) {
            return .success(Normalized(path: target, query: nil, dotDotOrigins: []))
        }
        let bytes = Array(target.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return .failure(.notOriginForm) }
        var pathEnd = bytes.count
        var query: String?
        if let q = bytes.firstIndex(of: UInt8(ascii: "?")) {
            pathEnd = q
            let raw = bytes[(q + 1)...]
            if let bad = validateQuery(raw) { return .failure(bad) }
            query = String(decoding: raw, as: UTF8.self)
        }
        if bytes[..<pathEnd].contains(UInt8(ascii: "#")) { return .failure(.fragment) }
        if isAlreadyNormal(bytes.span.extracting(..<pathEnd)) {
            return .success(
                Normalized(
                    path: String(decoding: bytes[..<pathEnd], as: UTF8.self),
                    query: query, dotDotOrigins: []))
        }

        // Pass 1: percent-decoding and character rules, segment by segment.
        var segments: [[UInt8]] = []
        var current: [UInt8] = []
        var i = 1
        var trailingSlash = false
        while i < pathEnd {
            let c = bytes[i]
            if c == UInt8(ascii: "/") {
                if !current.isEmpty { segments.append(current) }
                current.removeAll(keepingCapacity: true)
                trailingSlash = true
                i += 1
                continue
            }
            trailingSlash = false
            if c == UInt8(ascii: "%") {
                guard i + 2 < pathEnd,
                    let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2])
                else {
                    return .failure(.badPercentEncoding)
                }
                let decoded = hi << 4 | lo
                if decoded == UInt8(ascii: "/") { return .failure(.encodedSlash) }
                if decoded == UInt8(ascii: "\\") { return .failure(.backslash) }
                if decoded < 0x20 || decoded == 0x7f { return .failure(.controlCharacter) }
                if decoded == UInt8(ascii: ";") { return .failure(.pathParameter) }
                if isUnreserved(decoded) {
                    current.append(decoded)
                } else {
                    appendEncoded(decoded, to: &current)
                }
                i += 3
                continue
            }
            if c == UInt8(ascii: "\\") { return .failure(.backslash) }
            if c == UInt8(ascii: ";") { return .failure(.pathParameter) }
            if c < 0x20 || c == 0x7f || c == 0x20 { return .failure(.controlCharacter) }
            if isPchar(c) { current.append(c) } else { appendEncoded(c, to: &current) }
            i += 1
        }
        if !current.isEmpty { segments.append(current) }

        // Pass 2: dot-segments (RFC 3986 §5.2.4), refusing a climb above the root.
        var output: [[UInt8]] = []
        var origins: [String] = []
        // Each `..` costs a route lookup later; bound the work one request can ask for.
        if segments.lazy.filter({ $0 == [0x2e, 0x2e] }).count > 32 { return .failure(.tooManyDotSegments) }
        var removedDot = false
        for (n, seg) in segments.enumerated() {
            let isLast = n == segments.count - 1
            if seg == [0x2e] {
                if isLast { trailingSlash = true }
                removedDot = true
                continue
            }
            if seg == [0x2e, 0x2e] {
                guard !output.isEmpty else { return .failure(.escapesRoot) }
                origins.append(join(output, trailingSlash: true))
                output.removeLast()
                if isLast { trailingSlash = true }
                continue
            }
            output.append(seg)
        }
        let path = join(output, trailingSlash: trailingSlash && !output.isEmpty)
        let spelled = origins.isEmpty && !removedDot ? nil : join(segments, trailingSlash: trailingSlash)
        return .success(Normalized(path: path, query: query, dotDotOrigins: origins, spelled: spelled))
    }

    /// A target that is a normal path with nothing else: "/" first, then what
    /// `isAlreadyNormal` accepts, no query, no fragment.
    private static func isPlainPath(_ target: Span<UInt8>) -> Bool {
        !target.isEmpty && target[0] == UInt8(ascii: "/") && isAlreadyNormal(target)
    }

    /// Fast path for the common case: only pchar and "/", no "%", no "//", no "/.".
    private static func isAlreadyNormal(_ path: Span<UInt8>) -> Bool {
        var previous: UInt8 = 0
        for i in path.indices {
            let c = path[i]
            if c == UInt8(ascii: "/") {
                if previous == UInt8(ascii: "/") { return false }
            } else if c == UInt8(ascii: ".") {
                if previous == UInt8(ascii: "/") { return false }
            } else if !isPchar(c) || c == UInt8(ascii: ";") {
                return false
            }
            previous = c
        }
        return true
    }

    private static func join(_ segments: [[UInt8]], trailingSlash: Bool) -> String {
        var out: [UInt8] = [UInt8(ascii: "/")]
        for (n, seg) in segments.enumerated() {
            if n > 0 { out.append(UInt8(ascii: "/")) }
            out.append(contentsOf: seg)
        }
        if trailingSlash && !segments.isEmpty { out.append(UInt8(ascii: "/")) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The query is passed through undecoded, but must hold no bytes that could split or
    /// smuggle a request line.
    private static func validateQuery(_ raw: ArraySlice<UInt8>) -> Rejection? {
        var i = raw.startIndex
        while i < raw.endIndex {
            let c = raw[i]
            if c < 0x21 || c == 0x7f { return .controlCharacter }
            if c == UInt8(ascii: "#") { return .fragment }
            if c == UInt8(ascii: "%") {
                guard i + 2 < raw.endIndex, hexValue(raw[i + 1]) != nil, hexValue(raw[i + 2]) != nil else {
                    return .badPercentEncoding
                }
                let v = hexValue(raw[i + 1])! << 4 | hexValue(raw[i + 2])!
                if v == 0 { return .controlCharacter }
            }
            i += 1
        }
        return nil
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    /// RFC 3986 §2.3 unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~".
    static func isUnreserved(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)
            || c == 0x2d || c == 0x2e || c == 0x5f || c == 0x7e
    }

    /// RFC 3986 §3.3 pchar minus "%" (handled above): unreserved / sub-delims / ":" / "@".
    static func isPchar(_ c: UInt8) -> Bool {
        if isUnreserved(c) { return true }
        switch c {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"),
            UInt8(ascii: "@"):
            return true
        default:
            return false
        }
    }

    private static func appendEncoded(_ c: UInt8, to out: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        out.append(UInt8(ascii: "%"))
        out.append(hex[Int(c >> 4)])
        out.append(hex[Int(c & 0xf)])
    }
}
