import Reactor

/// Reading the gateway's cookies from a request and writing them in a response (RFC 6265).
/// A value longer than one cookie can carry is split over `name`, `name_1`, `name_2` …
/// (the rule: keep a session in one cookie when it fits, split it when it cannot).
struct Cookies {
    /// Room for the value in one cookie, leaving space for the name and attributes under
    /// browsers' 4096-byte limit per cookie.
    static let chunkSize = 3800
    static let maxChunks = 4

    /// Every cookie of the request (all Cookie headers), first value of each name.
    let values: [String: String]
    /// Names sent twice with different values. A cookie from a sibling subdomain (or, with
    /// `secure_cookie: false`, from any plain-http page of the site) can sit beside ours
    /// under the same name, and the browser sends both in an order the server cannot trust
    /// (RFC 6265 §5.4, §8.6: cookie tossing). Such a name has no value here.
    let conflicting: Set<String>

    init(_ fields: HTTP1Fields) { self.init(cookieHeaders: fields.values("Cookie")) }

    /// From the Cookie header values themselves.
    init(cookieHeaders: [String]) {
        var out: [String: String] = [:]
        var twice = Set<String>()
        for header in cookieHeaders {
            Self.pairs(header) { name, value in
                let n = String(decodingUTF8: name)
                let v = String(decodingUTF8: value)
                if let first = out[n] {
                    if first != v { twice.insert(n) }
                } else {
                    out[n] = v
                }
            }
        }
        values = out
        conflicting = twice
    }

    /// The `name=value` pairs of one Cookie header, on its UTF-8 bytes (it runs on every
    /// request of a login route, and session cookies are kilobytes long).
    static func pairs(_ header: String, _ body: (Span<UInt8>, Span<UInt8>) -> Void) {
        let b = header.utf8.span
        var i = 0
        while i < b.count {
            // memchr: a session cookie is kilobytes long, a byte loop ran ~4 instructions
            // per byte of it on every request.
            let end = b.firstIndex(of: UInt8(ascii: ";"), from: i) ?? b.count
            var start = i
            while start < end && b[start] == UInt8(ascii: " ") { start += 1 }
            var eq = start
            while eq < end && b[eq] != UInt8(ascii: "=") { eq += 1 }
            if eq < end { body(b.extracting(start..<eq), b.extracting((eq + 1)..<end)) }
            i = end + 1
        }
    }

    /// The value of `name`, joined from its chunks; nil if it or a chunk came with two values.
    func value(_ name: String) -> String? {
        guard !isConflicting(name), var v = values[name] else { return nil }
        for i in 1..<Self.maxChunks {
            guard let more = values["\(name)_\(i)"] else { break }
            v += more
        }
        return v
    }

    /// Whether `name`, or one of its chunks, arrived with two different values.
    func isConflicting(_ name: String) -> Bool {
        guard !conflicting.isEmpty else { return false }
        return conflicting.contains(name) || (1..<Self.maxChunks).contains { conflicting.contains("\(name)_\($0)") }
    }

    /// Whether the request carries chunk `i` of `name`.
    func hasChunk(_ name: String, _ i: Int) -> Bool { values["\(name)_\(i)"] != nil }

    struct Attributes {
        var secure: Bool
        var maxAge: Int64
        /// Lax: sent on top-level navigations from other sites (the AS's redirect back), not
        /// on their subrequests or form POSTs (CSRF).
        var sameSite = "Lax"
        /// `session.cookie_domain` (RFC 6265 §5.2.3): sent to every host under it. nil: host-only.
        var domain: String? = nil
    }

    /// Set-Cookie values storing `value` under `name` (split if needed), and clearing the
    /// chunks the request had that are no longer used. nil if it cannot fit at all.
    func set(_ name: String, _ value: String, _ a: Attributes) -> [String]? {
        var chunks: [Substring] = []
        var rest = Substring(value)
        while !rest.isEmpty {
            chunks.append(rest.prefix(Self.chunkSize))
            rest = rest.dropFirst(Self.chunkSize)
        }
        guard chunks.count <= Self.maxChunks else { return nil }
        if chunks.isEmpty { chunks = [""] }
        var out = chunks.enumerated().map { i, c in Self.line(i == 0 ? name : "\(name)_\(i)", String(c), a) }
        var gone = a
        gone.maxAge = 0
        for i in chunks.count..<Self.maxChunks where hasChunk(name, i) {
            out.append(Self.line("\(name)_\(i)", "", gone))
        }
        return out
    }

    /// Set-Cookie values deleting `name` and its chunks.
    /// A cookie set with a Domain is deleted only by one with the same Domain (RFC 6265 §5.3 step 11).
    func clear(_ name: String, secure: Bool, domain: String? = nil) -> [String] {
        let a = Attributes(secure: secure, maxAge: 0, domain: domain)
        return [Self.line(name, "", a)]
            + (1..<Self.maxChunks).filter { hasChunk(name, $0) }.map { Self.line("\(name)_\($0)", "", a) }
    }

    static func line(_ name: String, _ value: String, _ a: Attributes) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(max(0, a.maxAge)); HttpOnly; SameSite=\(a.sameSite)"
            + (a.secure ? "; Secure" : "")
            + (a.domain.map { "; Domain=\($0)" } ?? "")
    }

    /// The cookie name as sent: with Secure cookies the `__Host-` prefix, which browsers
    /// accept only from a secure origin, for Path=/ and without Domain — so no sibling
    /// subdomain can set or shadow it.
    /// With a Domain (`session.cookie_domain`) the `__Secure-` prefix instead (RFC 6265bis
    /// §4.1.3.1): it still proves the cookie was set over a secure channel, but every host
    /// under the domain can set it — the price of one login across them.
    static func name(_ base: String, secure: Bool, domain: String? = nil) -> String {
        guard secure else { return base }
        return (domain == nil ? "__Host-" : "__Secure-") + base
    }
}
