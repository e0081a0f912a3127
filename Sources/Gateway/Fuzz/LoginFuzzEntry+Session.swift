import JOSE

/// The sealed session cookie (AES-256-GCM, `CookieSealer`), in one cookie or split in chunks.
extension LoginFuzzEntry {
    /// A session small enough for one cookie, and one that needs three.
    static let sessions: [Session] = [
        session(access: nil, refresh: "Z0FBQUFBQnJBOVpvSmhNSHV3Y0VwSkU4"),
        session(
            access: String(repeating: "an opaque token ", count: 320),
            refresh: String(repeating: "refresh ", count: 250))
    ]

    private static func session(access: String?, refresh: String?) -> Session {
        Session(
            id: "s-\(access?.utf8.count ?? 0)", client: "web", subject: "alice",
            claims: JSONObject(["email": .string("a@example.com"), "sid": .string("as-1")]), idToken: nil,
            accessToken: access, refreshToken: refresh, accessExpiresAt: 1_700_000_300, createdAt: 1_700_000_000,
            lastSeenAt: 1_700_000_100)
    }

    static let cookieName = Cookies.name("tokengate_session", secure: true)
    static let sealer = CookieSealer(keys: [AEADKey(secret: [UInt8](repeating: 7, count: 32))!])

    /// Each session sealed once per process, as `CookieSessionStore.save` seals it; it opens,
    /// and one byte shorter or longer it does not.
    static let sealed: [String] = sessions.map { s in
        var value = ""
        store().save(s, expiresAt: 1_700_086_400, creating: true) { value = (try? $0.get()) ?? "" }
        fuzzInvariant(open(value) == s, "session: the fuzz entry's session does not seal and open")
        fuzzInvariant(
            open(String(value.dropLast())) == nil && open(value + "A") == nil, "session: a cut or longer cookie opens")
        return value
    }

    static let sealedChunks = sealed.map(chunks)

    private struct FixedClock: WallClock {
        var now: Double { 1_700_000_200 }
    }

    /// A store of its own for each input, so no input depends on what came before it.
    private static func store() -> CookieSessionStore {
        CookieSessionStore(sealer: sealer, ended: EndedSessions(capacity: 16), wallClock: FixedClock())
    }

    /// What the gateway's session check gets from these Cookie headers: the joined value and
    /// the session it opens to (`LoginService.authenticate`: a conflicting name is no session).
    static func load(_ headers: [String]) -> (value: String?, session: Session?) {
        let cookies = Cookies(cookieHeaders: headers)
        guard !cookies.isConflicting(cookieName), let value = cookies.value(cookieName) else { return (nil, nil) }
        return (value, open(value))
    }

    static func open(_ value: String) -> Session? {
        var found: Session?
        store().load(value) { if case .found(let s) = $0 { found = s } }
        return found
    }

    /// Input: a byte choosing the session and whether to flip a bit of its sealed value, two
    /// bytes for that bit's position, then Cookie header lines ("\n" between them) in which
    /// 0xF0+k stands for chunk k's `name=value` as the browser sends it back, 0xF4+k for its
    /// value alone and 0xF8+k for its name (k < 4). Checks:
    /// - the Set-Cookie lines that carry the value fit a browser's cookie (4096 bytes);
    /// - the value with any one bit changed opens to nothing (nor, checked once, with a byte
    ///   less or more);
    /// - whatever the headers, a session that opens is the sealed one, from its exact value —
    ///   a chunked cookie is rebuilt exactly or refused;
    /// - the bytes as a session's plaintext (`SessionEncoding`) decode, if at all, to a session
    ///   that encodes and decodes back to itself.
    public static func sessionCookie(_ data: [UInt8]) {
        guard data.count >= 3 else { return }
        let which = Int(data[0] & 1)
        let original = sealed[which]
        let value = Array(original.utf8)
        let bit = (Int(data[1]) << 8 | Int(data[2])) % (value.count * 8)
        var flipped = value
        flipped[bit / 8] ^= 1 << (bit % 8)
        fuzzInvariant(
            open(String(decoding: flipped, as: UTF8.self)) == nil, "session: a cookie with a bit changed opens")
        let pieces = data[0] & 2 != 0 ? chunks(String(decoding: flipped, as: UTF8.self)) : sealedChunks[which]
        let template = Array(data.dropFirst(3))
        let expanded = expand(template, pieces)
        let (joined, session) = load(lines(expanded))
        if let session {
            fuzzInvariant(joined == original && session == sessions[which], "session: opened from another value")
        }
        if let decoded = SessionEncoding.decode(Array(data.dropFirst(3))) {
            fuzzInvariant(
                decoded.encoded().flatMap(SessionEncoding.decode) == decoded, "session: encoding does not round-trip")
        }
    }

    /// The value's chunks as `Cookies.set` writes them: each Set-Cookie line's `name=value`.
    private static func chunks(_ value: String) -> [(name: String, value: String)] {
        let attributes = Cookies.Attributes(secure: true, maxAge: 3600)
        guard let lines = Cookies(cookieHeaders: []).set(cookieName, value, attributes) else {
            fatalError("session: a sealed session does not fit the cookies")
        }
        return lines.map { line in
            fuzzInvariant(line.utf8.count <= 4096, "session: a Set-Cookie line longer than a browser keeps")
            let pair = line.prefix { $0 != ";" }
            let eq = pair.firstIndex(of: "=")!
            return (String(pair[..<eq]), String(pair[pair.index(after: eq)...]))
        }
    }

    /// The template with its chunk markers replaced (a marker for a chunk that does not
    /// exist stands for nothing). Only the first 12 markers expand: each is up to 3,800 bytes,
    /// and a template of markers alone would otherwise make megabytes of headers to parse.
    private static func expand(_ template: [UInt8], _ pieces: [(name: String, value: String)]) -> [UInt8] {
        var out: [UInt8] = []
        var markers = 0
        for b in template {
            let k = Int(b & 3)
            switch b {
            case 0xF0...0xFB:
                markers += 1
                guard k < pieces.count, markers <= 12 else { continue }
                switch b >> 2 & 3 {
                case 0: out += Array("\(pieces[k].name)=\(pieces[k].value)".utf8)
                case 1: out += Array(pieces[k].value.utf8)
                default: out += Array(pieces[k].name.utf8)
                }
            default: out.append(b)
            }
        }
        return out
    }
}
