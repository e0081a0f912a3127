public import JOSE

/// Entry points for fuzzing a Shared Signals receiver's parsing of what a transmitter sends
/// (the libFuzzer target `SETFuzz` in `fuzz/`; the corpus replay test calls the same): a
/// SET as it arrives (any bytes, never signed right), a SET's claims signed with the
/// transmitter's key (so every claim, event and subject rule is reached), and a subject
/// identifier alone (RFC 9493). They return normally on every input; a failed
/// `fuzzInvariant` is a finding.
public enum SETFuzzEntry {
    static let issuer = "https://tx.example"
    static let audience = "https://gw.example"
    static let key = try! JWK.generate(for: .ES256, kid: "fuzz-1")
    static let keys = JWKSet(keys: [try! JWK(object: key.publicJWK())])
    static let verifier = SecurityEventTokenVerifier(issuer: issuer, audience: audience)
    static let now: Int64 = 1_800_000_000

    /// The first byte chooses; the rest is the input.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let rest = Array(data.dropFirst())
        switch first % 3 {
        case 0: arrived(String(decoding: rest, as: UTF8.self))
        case 1: signedClaims(rest, typ: first & 0x80 == 0 ? "secevent+jwt" : "JWT")
        default: subject(rest)
        }
    }

    /// A body as a push delivers it: refused with one of RFC 8935's errors, never accepted
    /// (nothing here is signed with the transmitter's key).
    static func arrived(_ text: String) {
        do {
            _ = try verifier.verify(text, keys: keys, now: now)
            fuzzInvariant(false, "a SET not signed with the transmitter's key was accepted")
        } catch {
            fuzzInvariant(!error.description.isEmpty, "a refusal without a description")
        }
    }

    /// `bytes` as the claims of a SET signed with the transmitter's key: whatever passes keeps
    /// SSF's rules (its issuer and audience, a jti, an iat, no sub, no exp, a subject for every
    /// event with an effect).
    static func signedClaims(_ bytes: [UInt8], typ: String) {
        guard let claims = try? JSONParser.parse(bytes).object,
            let token = try? JWSSigner.sign(
                claims: claims, header: JSONObject(["typ": .string(typ)]), alg: .ES256, key: key)
        else { return }
        let set: SecurityEventToken
        do {
            set = try verifier.verify(token, keys: keys, now: now)
        } catch {
            fuzzInvariant(!error.description.isEmpty, "a refusal without a description")
            return
        }
        fuzzInvariant(typ == "secevent+jwt", "a SET typed \(typ) was accepted")
        fuzzInvariant(claims["iss"]?.string == issuer, "another issuer's SET was accepted")
        fuzzInvariant(claims["sub"] == nil && claims["exp"] == nil, "a SET with sub or exp was accepted")
        fuzzInvariant(!set.jti.isEmpty && set.iat <= now + verifier.leeway, "a SET without a jti or from the future")
        fuzzInvariant(
            set.event.subject != nil || set.event.type.configName == nil, "an event with an effect names no subject")
        fuzzInvariant(set.event.uri.utf8.count <= 800, "an event type's name was kept whole")
    }

    /// A subject identifier alone: what parses keeps RFC 9493's nesting rules.
    static func subject(_ bytes: [UInt8]) {
        guard let object = try? JSONParser.parse(bytes).object,
            let subject = try? SubjectIdentifier(object)
        else { return }
        fuzzInvariant(depth(subject) <= 2, "a subject nested more than aliases or complex allow")
    }

    static func depth(_ s: SubjectIdentifier) -> Int {
        switch s {
        case .aliases(let all): 1 + (all.map(depth).max() ?? 0)
        case .complex(let user, let session): 1 + max(user.map(depth) ?? 0, session.map(depth) ?? 0)
        default: 1
        }
    }
}
