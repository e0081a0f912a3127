import JOSE

/// The compact binary form of a session, sealed into the cookie (or Redis value): tokens are
/// kept as the bytes their base64url text encodes (JWT segments each decoded), which is a
/// quarter smaller than the text and keeps a typical session — ID token, refresh token,
/// claims — within one 4 KB cookie once sealed and encoded. Layout: version byte, then
/// fields in a fixed order, each `kind (1) ‖ length (2, big-endian) ‖ bytes`.
enum SessionEncoding {
    static let version: UInt8 = 2

    private enum Kind: UInt8 {
        case absent = 0
        case text = 1
        case packed = 2
        case number = 3
    }

    /// nil when a field is longer than 65,535 bytes (a token that large is refused, not stored).
    static func encode(_ s: Session) -> [UInt8]? {
        var out: [UInt8] = [version]
        var tooLarge = false
        func bytes(_ kind: Kind, _ b: [UInt8]) {
            guard b.count <= 0xffff else {
                tooLarge = true
                return
            }
            out.append(kind.rawValue)
            out.append(UInt8(b.count >> 8))
            out.append(UInt8(b.count & 0xff))
            out += b
        }
        func string(_ v: String?) {
            guard let v else {
                bytes(.absent, [])
                return
            }
            if let packed = pack(v) { bytes(.packed, packed) } else { bytes(.text, Array(v.utf8)) }
        }
        func number(_ v: Int64) { bytes(.number, (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) }) }
        string(s.id)
        string(s.client)
        string(s.subject)
        bytes(.text, Array(JSONSerializer.serialize(.object(s.claims)).utf8))
        string(s.idToken)
        string(s.accessToken)
        string(s.refreshToken)
        number(s.accessExpiresAt)
        number(s.createdAt)
        number(s.lastSeenAt)
        // Optional trailing fields: sessions sealed before they existed decode unchanged. The
        // second needs the first in front of it (0: none).
        if s.userinfoStaleSince != nil || s.refreshedAt != nil { number(s.userinfoStaleSince ?? 0) }
        if let refreshed = s.refreshedAt { number(refreshed) }
        return tooLarge ? nil : out
    }

    static func decode(_ b: [UInt8]) -> Session? {
        guard b.first == version else { return nil }
        var i = 1
        func field() -> (Kind, ArraySlice<UInt8>)? {
            guard i + 3 <= b.count, let kind = Kind(rawValue: b[i]) else { return nil }
            let n = Int(b[i + 1]) << 8 | Int(b[i + 2])
            guard i + 3 + n <= b.count else { return nil }
            defer { i += 3 + n }
            return (kind, b[(i + 3)..<(i + 3 + n)])
        }
        func string() -> String?? {
            guard let (kind, v) = field() else { return nil }
            switch kind {
            case .absent: return .some(nil)
            case .text: return String(validating: v, as: UTF8.self).map { .some($0) }
            case .packed: return unpack(v).map { .some($0) }
            case .number: return nil
            }
        }
        func number() -> Int64? {
            guard let (kind, v) = field(), kind == .number, v.count == 8 else { return nil }
            return v.reduce(0) { $0 << 8 | Int64($1) }
        }
        guard let id = string() ?? nil, let client = string() ?? nil, let subject = string() ?? nil,
            let (claimsKind, claimsBytes) = field(), claimsKind == .text,
            let claims = try? JSONParser.parseObject(Array(claimsBytes), what: "session claims"),
            let idToken = string(), let accessToken = string(), let refreshToken = string(),
            let ax = number(), let ct = number(), let ls = number()
        else { return nil }
        var stale: Int64?
        var refreshed: Int64?
        if i < b.count {
            guard let v = number() else { return nil }
            stale = v == 0 ? nil : v
        }
        if i < b.count {
            guard let v = number() else { return nil }
            refreshed = v
        }
        guard i == b.count else { return nil }
        var session = Session(
            id: id, client: client, subject: subject, claims: claims, idToken: idToken, accessToken: accessToken,
            refreshToken: refreshToken, accessExpiresAt: ax, createdAt: ct, lastSeenAt: ls)
        session.userinfoStaleSince = stale
        session.refreshedAt = refreshed
        return session
    }

    /// Up to three dot-separated canonical base64url segments (a JWS, or one opaque token) as
    /// `count ‖ (length (2) ‖ bytes)…`; nil when the text is not of that form.
    static func pack(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 3, !text.isEmpty else { return nil }
        var out: [UInt8] = [UInt8(parts.count)]
        for p in parts {
            guard let raw = Base64URL.decode(String(p)), Base64URL.encode(raw) == p, raw.count < 65_536 else {
                return nil
            }
            out.append(UInt8(raw.count >> 8))
            out.append(UInt8(raw.count & 0xff))
            out += raw
        }
        return out
    }

    static func unpack(_ b: ArraySlice<UInt8>) -> String? {
        guard let count = b.first, count >= 1, count <= 3 else { return nil }
        var i = b.startIndex + 1
        var parts: [String] = []
        for _ in 0..<count {
            guard i + 2 <= b.endIndex else { return nil }
            let n = Int(b[i]) << 8 | Int(b[i + 1])
            guard i + 2 + n <= b.endIndex else { return nil }
            parts.append(Base64URL.encode(Array(b[(i + 2)..<(i + 2 + n)])))
            i += 2 + n
        }
        return i == b.endIndex ? parts.joined(separator: ".") : nil
    }
}
