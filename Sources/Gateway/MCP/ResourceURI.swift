/// A resource URI as `mcp.resources` rules compare it: in one form for every spelling an MCP
/// server could read as the same resource, so that no spelling of a protected resource passes
/// as another. Applied to the URI a `resources/read` or `resources/subscribe` names and to each
/// configured rule's, alike.
///
/// - RFC 3986 §6.2.2: the scheme and host in lower case (§6.2.2.1), percent-encodings with
///   upper-case hex, and those of unreserved characters decoded (§6.2.2.2), `.` and `..`
///   segments removed (§6.2.2.3, §5.2.4). Bytes a URI may not hold (non-ASCII, spaces) are
///   percent-encoded, as a server that decodes the path reads them the same.
/// - RFC 8089 §2: a `file` URI's host `localhost` is the empty host, and `file:/path` (no
///   authority) is `file:///path`.
///
/// Refused, because a server could read them as another resource: a malformed `%`, an
/// encoded `/` or `\` or a raw `\` (a server that decodes the path would see another
/// segment), control bytes, an empty segment inside the path (`//`: collapsed by some
/// servers, not by others), a `..` above the root, a fragment (RFC 3986 §3.5: never part of
/// what is retrieved), a `file` URI whose path is not absolute, and anything without a scheme.
enum ResourceURI {
    /// Why a URI is refused; said to the client and in a config problem.
    struct Refusal: Error, Equatable, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// The normalized form of `uri`, or why it has none.
    static func normalized(_ uri: String) -> Result<String, Refusal> {
        let bytes = Array(uri.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isScheme(bytes[..<colon]) else {
            return .failure(Refusal(reason: "not an absolute URI (RFC 3986 §4.3: a scheme, then ':')"))
        }
        if bytes.contains(UInt8(ascii: "#")) {
            return .failure(Refusal(reason: "a resource URI has no fragment (RFC 3986 §3.5)"))
        }
        let scheme = String(decoding: bytes[..<colon].map(lower), as: UTF8.self)
        var rest = bytes[(colon + 1)...]
        var query: ArraySlice<UInt8> = []
        if let mark = rest.firstIndex(of: UInt8(ascii: "?")) {
            query = rest[mark...]
            rest = rest[..<mark]
        }
        var authority: [UInt8]?
        var path = rest
        if rest.starts(with: [0x2F, 0x2F]) {
            let afterSlashes = rest.index(rest.startIndex, offsetBy: 2)
            let end = rest[afterSlashes...].firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
            authority = Array(rest[afterSlashes..<end])
            path = rest[end...]
        }
        do throws(Refusal) {
            var host: [UInt8]?
            if let authority { host = lowerHost(try encoded(authority[...], isPath: false)) }
            let isFile = scheme == "file"
            // RFC 8089 §2: "localhost" and the empty host are the same file host; `file:/path`
            // has no authority but is the same URI as `file:///path`.
            if isFile && (host == nil || host == Array("localhost".utf8)) && path.first == UInt8(ascii: "/") {
                host = []
            }
            // RFC 8089 §2: a file URI's path is absolute; `file:srv/x` would be resolved against
            // whatever directory the server runs in.
            if isFile && path.first != UInt8(ascii: "/") {
                throw Refusal(reason: "a file URI's path is absolute (RFC 8089 §2)")
            }
            let normalPath = try segments(encoded(path, isPath: true))
            let normalQuery = try encoded(query, isPath: false)
            var out = Array(scheme.utf8) + [UInt8(ascii: ":")]
            if let host { out += [0x2F, 0x2F] + host }
            out += normalPath + normalQuery
            return .success(String(decoding: out, as: UTF8.self))
        } catch {
            return .failure(error)
        }
    }

    /// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isScheme(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, isAlpha(first) else { return false }
        return bytes.allSatisfy { isAlpha($0) || isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E }
    }

    /// Every `%XX` with upper-case hex, decoded where it stands for an unreserved character
    /// (§2.3), and every byte a URI may not hold encoded. `isPath`: an encoded `/` or `\`, or
    /// a raw `\`, is refused (in a query they name no segment).
    private static func encoded(_ bytes: ArraySlice<UInt8>, isPath: Bool) throws(Refusal) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, let high = PathNormalizer.hexValue(bytes[i + 1]),
                    let low = PathNormalizer.hexValue(bytes[i + 2])
                else { throw Refusal(reason: "a malformed percent-encoding (RFC 3986 §2.1)") }
                let decoded = high << 4 | low
                if isPath && (decoded == UInt8(ascii: "/") || decoded == UInt8(ascii: "\\")) {
                    throw Refusal(reason: "an encoded '/' or '\\': a server that decodes it reads another path")
                }
                if decoded < 0x20 || decoded == 0x7F {
                    throw Refusal(reason: "an encoded control character")
                }
                if isUnreserved(decoded) {
                    out.append(decoded)
                } else {
                    out += [UInt8(ascii: "%"), hexDigits[Int(high)], hexDigits[Int(low)]]
                }
                i += 3
                continue
            }
            if b < 0x20 || b == 0x7F { throw Refusal(reason: "a control character") }
            if isPath && b == UInt8(ascii: "\\") { throw Refusal(reason: "a '\\': some servers read it as '/'") }
            if b >= 0x80 || !isAllowed(b) {
                out += [UInt8(ascii: "%"), hexDigits[Int(b >> 4)], hexDigits[Int(b & 0x0F)]]
            } else {
                out.append(b)
            }
            i += 1
        }
        return out
    }

    /// RFC 3986 §5.2.4, where a path has segments: `.` removed, `..` removing the one before
    /// it; a `..` above the root and an empty segment inside the path are refused. A trailing
    /// `/` (an empty last segment) stays: it is how a collection is named.
    private static func segments(_ path: [UInt8]) throws(Refusal) -> [UInt8] {
        guard path.contains(UInt8(ascii: "/")) || path == [0x2E] || path == [0x2E, 0x2E] else { return path }
        let rooted = path.first == UInt8(ascii: "/")
        var parts = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        if rooted { parts.removeFirst() }
        var kept: [ArraySlice<UInt8>] = []
        var trailingSlash = false
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1
            switch part {
            case [0x2E]:
                trailingSlash = last
            case [0x2E, 0x2E]:
                guard !kept.isEmpty else { throw Refusal(reason: "a '..' segment above the root") }
                kept.removeLast()
                trailingSlash = last
            case []:
                guard last else { throw Refusal(reason: "an empty path segment ('//')") }
                trailingSlash = true
            default:
                kept.append(part)
                trailingSlash = false
            }
        }
        var out: [UInt8] = rooted ? [0x2F] : []
        out += kept.joined(separator: [0x2F])
        if trailingSlash && !kept.isEmpty { out.append(0x2F) }
        return out
    }

    /// The host part of an authority in lower case (§6.2.2.1); userinfo and port as they are.
    private static func lowerHost(_ authority: [UInt8]) -> [UInt8] {
        let hostStart = authority.lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? 0
        var out = authority
        for i in hostStart..<out.count { out[i] = lower(out[i]) }
        return out
    }

    private static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
    private static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    /// §2.3: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    private static func isUnreserved(_ b: UInt8) -> Bool {
        isAlpha(b) || isDigit(b) || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
    }
    /// Unreserved, gen-delims and sub-delims (§2.2): what a URI holds unencoded.
    private static func isAllowed(_ b: UInt8) -> Bool {
        isUnreserved(b) || delimiters.contains(b)
    }
    private static let delimiters = Array(":/?#[]@!$&'()*+,;=".utf8)
    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
