import JOSE
import OAuth

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
        /// What a step-up login asked (RFC 9470 §4: `acr_values`, `max_age`), for the
        /// callback to check the ID token against (OIDC Core §3.1.2.1). Empty / nil: not asked.
        var acrValues: [String] = []
        var maxAge: Int? = nil

        /// Why a verified ID token does not answer what this login asked, or nil. OIDC Core
        /// §3.1.2.1: with `max_age` asked, `auth_time` is REQUIRED and the user must have
        /// authenticated within it (`leeway` seconds of clock skew allowed); with
        /// `acr_values` asked, the `acr` said (§2) must be one of them.
        func authenticationFailure(_ claims: JSONObject, now: Int64, leeway: Int64) -> AuthorizationRequirement
            .StepUpFailure?
        {
            var asked = AuthorizationRequirement()
            asked.acr = acrValues
            asked.maxAge = maxAge
            return asked.stepUpFailure(claims, now: now, leeway: leeway, maxAgeGrace: leeway)
        }
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
            var o = JSONObject([
                "s": .string(l.state), "n": .string(l.nonce), "v": .string(l.codeVerifier),
                "r": .string(l.returnTo),
                "c": .string(l.client), "t": .number(String(l.createdAt))
            ])
            if !l.acrValues.isEmpty { o["a"] = .array(l.acrValues.map { .string($0) }) }
            if let m = l.maxAge { o["m"] = .number(String(m)) }
            return .object(o)
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
            var login = Login(state: s, nonce: n, codeVerifier: cv, returnTo: r, client: c, createdAt: t)
            if let a = o["a"] {
                guard let values = a.array?.compactMap(\.string), values.count == a.array?.count else { return nil }
                login.acrValues = values
            }
            if let m = o["m"] {
                guard let seconds = m.int64, seconds >= 0, seconds <= Int64(Int32.max) else { return nil }
                login.maxAge = Int(seconds)
            }
            logins.append(login)
        }
    }
}
