public import JOSE

/// Security Event Tokens (RFC 8417) from one Shared Signals transmitter, validated as SSF 1.0
/// §4.1 profiles them: `typ` `secevent+jwt`; signed with one of the transmitter's keys and an
/// asymmetric algorithm (never `none`, never an HMAC keyed with a public key); `iss` the
/// transmitter; `aud` holding the receiver; `jti` and `iat` present; no `sub` and no `exp`
/// (a SET is not an access token, and must never pass as one: RFC 8417 §4.1); one event type.
/// A refusal carries RFC 8935 §2.4's error code, which the push answer and the poll's
/// `setErrs` send back.
public struct SecurityEventTokenVerifier: Sendable {
    public let issuer: String
    /// The `aud` values that name this receiver: a SET must carry one of them.
    public let audiences: Set<String>
    /// Other spellings of `iss` the transmitter signs with (Google's RISC signs with a
    /// trailing slash its OpenID issuer lacks).
    public var issuerSpellings: Set<String> = []
    /// RFC 8417 §2.3 explicit typing (`typ: secevent+jwt`). Off only for a transmitter whose
    /// SETs carry no `typ` (Google's RISC); a `typ` present must still be `secevent+jwt`.
    public var requiresType = true
    public let algorithms: Set<JWSAlgorithm>
    public var leeway: Int64 = 30
    /// SETs issued longer ago than this are refused (nil: any age): a receiver that remembers
    /// applied `jti`s for this long never applies a replayed one again.
    public var maxAge: Int64?
    /// RFC 8935 leaves the size open; a SET is a few hundred bytes.
    public static let maxSize = 64 << 10

    /// `algorithms`: the transmitter's allow-list; symmetric ones are left out whatever it says.
    public init(
        issuer: String, audience: String,
        algorithms: Set<JWSAlgorithm> = [.RS256, .RS384, .RS512, .PS256, .PS384, .PS512, .ES256, .ES384, .EdDSA]
    ) {
        self.init(issuer: issuer, audiences: [audience], algorithms: algorithms)
    }

    public init(
        issuer: String, audiences: Set<String>,
        algorithms: Set<JWSAlgorithm> = [.RS256, .RS384, .RS512, .PS256, .PS384, .PS512, .ES256, .ES384, .EdDSA]
    ) {
        self.issuer = issuer
        self.audiences = audiences
        self.algorithms = algorithms.filter { !$0.isSymmetric }
    }

    public func verify(_ token: String, keys: JWKSet, now: Int64) throws(SETRefusal) -> SecurityEventToken {
        let jws: CompactJWS
        let claims: JSONObject
        do {
            jws = try CompactJWS(token, maxSize: Self.maxSize)
        } catch let e as JOSEError where e.code == .algorithmNotAllowed {
            throw SETRefusal(.invalidKey, "the SET is not signed with an algorithm the receiver accepts")
        } catch {
            throw SETRefusal(.invalidRequest, "the body is not a signed SET (a compact JWS)")
        }
        // RFC 8417 §2.3: explicit typing, so no other JWT passes as a SET.
        if let typ = jws.header.typ {
            guard JWSHeader.typesMatch(typ, "secevent+jwt") else {
                throw SETRefusal(.invalidRequest, "the SET's typ is not secevent+jwt")
            }
        } else if requiresType {
            throw SETRefusal(.invalidRequest, "the SET's typ is not secevent+jwt")
        }
        do {
            try JWSVerifier(keys: keys, algorithms: algorithms).verify(jws)
        } catch {
            throw SETRefusal(.invalidKey, "the SET's signature does not verify with the transmitter's keys")
        }
        do {
            claims = try jws.claims()
        } catch {
            throw SETRefusal(.invalidRequest, "the SET's claims are not a JSON object")
        }
        guard let iss = claims["iss"]?.string, iss == issuer || issuerSpellings.contains(iss) else {
            throw SETRefusal(.invalidIssuer, "the SET's iss is not the transmitter")
        }
        let named: [String]? =
            switch claims["aud"] {
            case .string(let s): [s]
            case .array(let a): a.compactMap(\.string)
            default: nil
            }
        guard let named, named.contains(where: audiences.contains) else {
            throw SETRefusal(.invalidAudience, "the SET's aud does not name this receiver")
        }
        guard let jti = claims["jti"]?.string, !jti.isEmpty, jti.utf8.count <= 256 else {
            throw SETRefusal(.invalidRequest, "the SET needs a jti (a string of at most 256 bytes)")
        }
        guard let iat = claims["iat"]?.int64, NumericDate.admits(iat) else {
            throw SETRefusal(.invalidRequest, "the SET needs an iat (a NumericDate)")
        }
        if iat > now + leeway { throw SETRefusal(.invalidRequest, "the SET was issued in the future") }
        if let maxAge, iat < now - maxAge { throw SETRefusal(.invalidRequest, "the SET is too old") }
        if claims["sub"] != nil { throw SETRefusal(.invalidRequest, "a SET names its subject in sub_id, never sub") }
        if claims["exp"] != nil { throw SETRefusal(.invalidRequest, "a SET has no exp") }
        let event = try Self.event(claims)
        // An event cannot happen after it was told: a time ahead would revoke tokens not yet
        // issued (every new login of the subject, until the revocation ends).
        if let at = event.timestamp, at > max(iat, now) + leeway {
            throw SETRefusal(.invalidRequest, "the event's timestamp is in the future")
        }
        return SecurityEventToken(jti: jti, iat: iat, event: event, txn: claims["txn"]?.string)
    }

    /// The one event of `events` (RFC 8417 §2.2), with its subject: the SET's `sub_id` (SSF 1.0
    /// §4.1.2), or the event's own `subject`. Several members are one event only when each
    /// names the same type (RISC's older names beside CAEP's).
    static func event(_ claims: JSONObject) throws(SETRefusal) -> SecurityEvent {
        guard let events = claims["events"]?.object, !events.isEmpty, events.count <= 4 else {
            throw SETRefusal(.invalidRequest, "the SET needs an events object with one event")
        }
        var first: (uri: String, type: SecurityEventType, payload: JSONObject)?
        for uri in events.names {
            guard let payload = events[uri]?.object else {
                throw SETRefusal(.invalidRequest, "an event's payload must be a JSON object")
            }
            let type = SecurityEventType(uri: uri)
            if let first {
                guard first.type == type, type != .other(uri) else {
                    throw SETRefusal(.invalidRequest, "a SET carries one event, not several")
                }
            } else {
                first = (uri, type, payload)
            }
        }
        guard let (uri, type, payload) = first else {
            throw SETRefusal(.invalidRequest, "the SET needs an events object with one event")
        }
        let subject: SubjectIdentifier?
        do throws(SubjectIdentifierError) {
            if let top = claims["sub_id"] {
                guard let o = top.object else { throw SubjectIdentifierError("sub_id must be an object") }
                subject = try SubjectIdentifier(o)
            } else if let inner = payload["subject"] {
                guard let o = inner.object else { throw SubjectIdentifierError("subject must be an object") }
                subject = try SubjectIdentifier(o)
            } else {
                subject = nil
            }
        } catch {
            throw SETRefusal(.invalidRequest, "the event's subject: \(error.description)")
        }
        // An event with an effect must say whom it is about; the stream's own may not.
        if subject == nil, type.configName != nil {
            throw SETRefusal(.invalidRequest, "the event names no subject (sub_id)")
        }
        let timestamp = payload["event_timestamp"]?.int64 ?? claims["toe"]?.int64
        if let timestamp, !NumericDate.admits(timestamp) {
            throw SETRefusal(.invalidRequest, "the event's timestamp is not a NumericDate")
        }
        return SecurityEvent(
            type: type, uri: String(uri.prefix(200)), subject: subject, timestamp: timestamp,
            state: payload["state"]?.string, status: payload["status"]?.string)
    }
}

/// A SET that passed: its id (what replays are caught by), when it was issued, its event.
public struct SecurityEventToken: Sendable, Equatable {
    public let jti: String
    public let iat: Int64
    public let event: SecurityEvent
    /// RFC 8417 §2.2 `txn`: the transaction that caused it, for the log.
    public let txn: String?

    /// When the event happened: its own timestamp, else when the SET was issued. Tokens
    /// issued before it are the ones it revokes.
    public var eventTime: Int64 { event.timestamp ?? iat }
}

/// Why a SET was refused, as RFC 8935 §2.4 names it (`err`) and says it (`description`),
/// never quoting the SET.
public struct SETRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        case invalidRequest = "invalid_request"
        case invalidKey = "invalid_key"
        case invalidIssuer = "invalid_issuer"
        case invalidAudience = "invalid_audience"
        case authenticationFailed = "authentication_failed"
        case accessDenied = "access_denied"
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
