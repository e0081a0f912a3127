import JOSE

/// Logins a browser has begun and not finished, kept in a sealed, short-lived cookie bound to
/// that browser: the callback's `state` must be one of them, and its nonce, PKCE verifier
/// and return address come from here. Several at once (parallel tabs), at most `max`: a new
/// one pushes out the oldest, so the cookie cannot pile up.
struct PendingLogins: Sendable, Equatable {
    struct Login: Sendable, Equatable {
        var state: String
        var nonce: String
        var codeVerifier: String
        var returnTo: String
        var client: String
        var createdAt: Int64
    }

    static let purpose = "login-state"
    var logins: [Login] = []

    static func random() -> String { Base64URL.encode(SecureRandom.bytes(32)) }

    mutating func add(_ login: Login, max: Int, now: Int64, timeout: Int64) {
        logins.removeAll { now - $0.createdAt >= timeout }
        logins.append(login)
        if logins.count > max { logins.removeFirst(logins.count - max) }
    }

    /// Removes and returns the pending login `state` names, if it has not timed out.
    mutating func take(state: String, now: Int64, timeout: Int64) -> Login? {
        guard let i = logins.firstIndex(where: { ConstantTime.equals(Array($0.state.utf8), Array(state.utf8)) }) else {
            return nil
        }
        let login = logins.remove(at: i)
        return now - login.createdAt < timeout ? login : nil
    }

    func json() -> [UInt8] {
        let array = logins.map { l -> JSONValue in
            .object(
                JSONObject([
                    "s": .string(l.state), "n": .string(l.nonce), "v": .string(l.codeVerifier),
                    "r": .string(l.returnTo),
                    "c": .string(l.client), "t": .number(String(l.createdAt))
                ]))
        }
        return Array(JSONSerializer.serialize(.array(array)).utf8)
    }

    init() {}

    init?(json: [UInt8]) {
        guard let array = (try? JSONParser.parse(json))?.array else { return nil }
        for v in array {
            guard let o = v.object, let s = o["s"]?.string, let n = o["n"]?.string, let cv = o["v"]?.string,
                let r = o["r"]?.string,
                let c = o["c"]?.string, let t = o["t"]?.int64
            else { return nil }
            logins.append(Login(state: s, nonce: n, codeVerifier: cv, returnTo: r, client: c, createdAt: t))
        }
    }
}
