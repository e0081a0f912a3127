import JOSE

/// What one applied SET left, as the store's log carries it to the other replicas: the
/// subjects' changes, and the stream's state when the event was the stream's own (a
/// verification, a `stream-updated`). Sealed with `session.keys` (AES-256-GCM, `CookieSealer`)
/// before it is written: the store never holds a `sub` or an email in the clear, and only a
/// replica with those keys can write one that others apply.
struct RevocationRecord: Sendable, Equatable {
    var transmitter: String
    var jti: String
    var changes: [RevocationTable.Change] = []
    /// A verification event came back (SSF 1.0 §8.1.4).
    var verified = false
    /// The status a `stream-updated` event gave.
    var status: String?

    static let purpose = "ssf-revocation"

    /// Whether applying it elsewhere changes anything.
    var isEmpty: Bool { changes.isEmpty && !verified && status == nil }

    func sealed(by sealer: CookieSealer) -> String {
        sealer.seal(Array(JSONSerializer.serialize(json).utf8), purpose: Self.purpose)
    }

    static func open(_ value: String, with sealer: CookieSealer) -> RevocationRecord? {
        guard let plain = sealer.open(value, purpose: purpose),
            let o = (try? JSONParser.parse(plain))?.object
        else { return nil }
        return RevocationRecord(o)
    }

    private var json: JSONValue {
        var o = JSONObject(["t": .string(transmitter), "j": .string(jti)])
        o["c"] = .array(changes.map(Self.json))
        if verified { o["v"] = .bool(true) }
        if let status { o["s"] = .string(status) }
        return .object(o)
    }

    private init?(_ o: JSONObject) {
        guard let transmitter = o["t"]?.string, let jti = o["j"]?.string,
            let changes = o["c"]?.array
        else { return nil }
        self.transmitter = transmitter
        self.jti = jti
        var read: [RevocationTable.Change] = []
        for c in changes {
            // Each change is the record's SET's: its `jti` is said once, for the record.
            guard var change = c.object.flatMap(Self.change) else { return nil }
            change.jti = jti
            read.append(change)
        }
        self.changes = read
        verified = o["v"]?.bool ?? false
        status = o["s"]?.string
    }

    init(transmitter: String, jti: String) {
        self.transmitter = transmitter
        self.jti = jti
    }

    private static func json(_ c: RevocationTable.Change) -> JSONValue {
        var o = JSONObject()
        switch c.subject {
        case .sub(let s): o["sub"] = .string(s)
        case .email(let e): o["email"] = .string(e)
        case .session(let s): o["session"] = .string(s)
        }
        if let issuer = c.issuer { o["iss"] = .string(issuer) }
        o["until"] = .number(String(c.until))
        switch c.effect {
        case .revoke(let at, let sid):
            o["revoke"] = .number(String(at))
            if let sid { o["sid"] = .string(sid) }
        case .claimsChange(let at): o["claims"] = .number(String(at))
        case .disable(let at): o["disable"] = .number(String(at))
        case .enable(let at): o["enable"] = .number(String(at))
        }
        return .object(o)
    }

    private static func change(_ o: JSONObject) -> RevocationTable.Change? {
        let subject: RevocationTable.Subject
        if let s = o["sub"]?.string {
            subject = .sub(s)
        } else if let e = o["email"]?.string {
            subject = .email(e)
        } else if let s = o["session"]?.string {
            subject = .session(s)
        } else {
            return nil
        }
        guard let until = o["until"]?.int64 else { return nil }
        let effect: RevocationTable.Effect
        if let at = o["revoke"]?.int64 {
            effect = .revoke(at: at, sid: o["sid"]?.string)
        } else if let at = o["claims"]?.int64 {
            effect = .claimsChange(at: at)
        } else if let at = o["disable"]?.int64 {
            effect = .disable(at: at)
        } else if let at = o["enable"]?.int64 {
            effect = .enable(at: at)
        } else {
            return nil
        }
        return RevocationTable.Change(effect: effect, subject: subject, issuer: o["iss"]?.string, until: until)
    }
}
