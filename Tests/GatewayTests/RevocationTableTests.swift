import JOSE
import OAuth
import Testing

@testable import Gateway

/// The revocations Shared Signals events leave (`RevocationTable`): a token or session issued
/// before the event is refused and one issued after passes; `account-disabled` refuses every
/// one until `account-enabled`; a session-narrowed event refuses that session only; an
/// `iss_sub` subject binds to its issuer; entries end with their time.
@Suite("Shared Signals: the revocation table")
struct RevocationTableTests {
    static let idp = "https://idp.example"
    let now: Int64 = 1_000_000

    func check(
        _ t: RevocationTable, sub: String? = "alice", email: String? = nil, issuer: String = idp, iat: Int64?,
        sid: String? = nil
    ) -> RevocationTable.Revoked? {
        t.check(sub: sub, email: email, issuer: issuer, iat: iat, sid: sid, now: now)
    }

    @Test func aTokenIssuedBeforeTheEventIsRefusedOneAfterPasses() {
        var t = RevocationTable()
        let applied = t.apply(
            .revoke(at: now - 10, sid: nil), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(applied)
        #expect(check(t, iat: now - 11) == .revoked)
        #expect(check(t, iat: now - 10) == .revoked)  // the event's own second: not after it
        #expect(check(t, iat: now - 9) == nil)
        #expect(check(t, iat: nil) == .revoked)  // no iat: it cannot postdate the event
        #expect(check(t, sub: "bob", iat: now - 11) == nil)
        // A later event moves the line; an older one does not bring it back.
        t.apply(.revoke(at: now - 2, sid: nil), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        t.apply(.revoke(at: now - 50, sid: nil), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now - 5) == .revoked && check(t, iat: now - 1) == nil)
    }

    @Test func aClaimsChangeRefusesEarlierTokensAndSaysSo() {
        var t = RevocationTable()
        t.apply(.claimsChange(at: now - 10), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now - 11) == .claimsChanged && check(t, iat: now - 9) == nil)
        // A revocation outranks it: the token is revoked, not just stale.
        t.apply(.revoke(at: now - 5, sid: nil), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now - 11) == .revoked)
        // It travels through the store's log as itself.
        var record = RevocationRecord(transmitter: "tx", jti: "j")
        record.changes = [
            .init(effect: .claimsChange(at: 7), subject: .email("a@b"), issuer: "corp", until: 9, jti: "j")
        ]
        let sealer = CookieSealer(keys: [AEADKey(secret: Array(repeating: 1, count: 32))!])
        #expect(RevocationRecord.open(record.sealed(by: sealer), with: sealer) == record)
    }

    @Test func aClaimsChangeUnderOneIdentifierNeverHidesARevocationUnderAnother() {
        var t = RevocationTable()
        t.apply(
            .revoke(at: now - 20, sid: nil), to: .email("alice@example.com"), issuer: nil, until: now + 60, now: now)
        t.apply(.claimsChange(at: now - 10), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(
            t.check(sub: "alice", email: "alice@example.com", issuer: Self.idp, iat: now - 30, sid: nil, now: now)
                == .revoked)
        // Issued between the two: only the claims change applies.
        #expect(
            t.check(sub: "alice", email: "alice@example.com", issuer: Self.idp, iat: now - 15, sid: nil, now: now)
                == .claimsChanged)
        // A session refreshed after the change is caught up with it, never with the revocation.
        let snapshotClaims = JSONObject(["sub": .string("alice"), "email": .string("alice@example.com")])
        var session = Session(
            id: "s", client: "web", subject: "alice", claims: snapshotClaims, idToken: nil, accessToken: nil,
            refreshToken: "r", accessExpiresAt: now + 300, createdAt: now - 30, lastSeenAt: now)
        session.refreshedAt = now - 5
        let caller = RevocationSubject(session: session, issuer: Self.idp)
        #expect(caller.issuedAt == now - 30 && caller.claimsAsOf == now - 4)
        #expect(
            t.check(
                sub: "alice", email: "alice@example.com", issuer: Self.idp, iat: caller.issuedAt, sid: nil, now: now)
                == .revoked)
    }

    @Test func anEventIsNeverLaterThanWhenItArrived() {
        #expect(
            RevocationTable.Effect.revoke(at: now + 50, sid: "s").happened(notAfter: now) == .revoke(at: now, sid: "s"))
        #expect(RevocationTable.Effect.claimsChange(at: now - 5).happened(notAfter: now) == .claimsChange(at: now - 5))
    }

    @Test func aDisabledAccountIsRefusedWhateverItsAgeUntilEnabled() {
        var t = RevocationTable()
        t.apply(.revoke(at: now - 10, sid: nil), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        t.apply(.disable(at: now), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now + 5) == .disabled)
        t.apply(.enable(at: now + 1), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now + 5) == nil)
        #expect(check(t, iat: now - 11) == .revoked)  // what was revoked before stays revoked
        // An older enable that arrives late (a retry) does not undo a newer disable.
        t.apply(.disable(at: now + 3), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        t.apply(.enable(at: now + 2), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now + 5) == .disabled)
        // A sub is one issuer's: enabling it at another issuer enables nobody here.
        t.apply(.disable(at: now), to: .sub("bob"), issuer: Self.idp, until: now + 60, now: now)
        t.apply(.enable(at: now + 1), to: .sub("bob"), issuer: "https://other.example", until: now + 60, now: now)
        #expect(check(t, sub: "bob", iat: now + 5) == .disabled)
        #expect(check(t, sub: "bob", issuer: "https://other.example", iat: now + 5) == nil)
    }

    @Test func aSessionNarrowedEventRefusesThatSessionOnly() {
        var t = RevocationTable()
        t.apply(.revoke(at: now, sid: "s-1"), to: .sub("alice"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, iat: now - 1, sid: "s-1") == .revoked)
        #expect(check(t, iat: now + 1, sid: "s-1") == nil)
        #expect(check(t, iat: now - 1, sid: "s-2") == nil)
        #expect(check(t, iat: now - 1) == nil)
        // A session named without its user.
        t.apply(.revoke(at: now, sid: nil), to: .session("s-9"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, sub: "carol", iat: now - 1, sid: "s-9") == .revoked)
        #expect(check(t, sub: "carol", iat: now - 1, sid: "s-8") == nil)
    }

    @Test func anEmailAndAnIssuerBoundSubjectMatchWhatTheyName() {
        var t = RevocationTable()
        t.apply(.disable(at: now), to: .email("A@Example.com"), issuer: nil, until: now + 60, now: now)
        #expect(check(t, sub: "x", email: "a@example.COM", iat: now) == .disabled)
        #expect(check(t, sub: "x", email: "b@example.com", iat: now) == nil)
        t.apply(.disable(at: now), to: .sub("bob"), issuer: Self.idp, until: now + 60, now: now)
        #expect(check(t, sub: "bob", iat: now) == .disabled)
        #expect(check(t, sub: "bob", issuer: "https://other.example", iat: now) == nil)
    }

    @Test func entriesEndWithTheirTimeAndTheTableIsBounded() {
        var t = RevocationTable(capacity: 2)
        t.apply(.disable(at: now), to: .sub("a"), issuer: nil, until: now + 1, now: now)
        t.apply(.disable(at: now), to: .sub("b"), issuer: nil, until: now + 60, now: now)
        #expect(t.check(sub: "a", email: nil, issuer: Self.idp, iat: now, sid: nil, now: now + 1) == nil)
        // Full: the entry whose time is over makes room; one that still stands does not.
        let roomMade = t.apply(.disable(at: now), to: .sub("c"), issuer: nil, until: now + 60, now: now + 2)
        let noRoom = t.apply(.disable(at: now), to: .sub("d"), issuer: nil, until: now + 60, now: now + 2)
        #expect(roomMade && !noRoom)
        #expect(t.count == 2)
    }

    @Test func subjectsBecomeTableKeys() {
        let issuers: Set<String> = [Self.idp]
        func keys(_ s: SubjectIdentifier) -> [String] {
            s.revokedSubjects(issuers: issuers).subjects.map { "\($0.0) \($0.issuer ?? "any")" }
        }
        #expect(keys(.opaque("u")) == ["sub(\"u\") any"])
        #expect(keys(.email("e")) == ["email(\"e\") any"])
        #expect(keys(.issSub(iss: Self.idp, sub: "u")) == ["sub(\"u\") \(Self.idp)"])
        #expect(keys(.issSub(iss: "https://other.example", sub: "u")).isEmpty)
        #expect(keys(.aliases([.opaque("u"), .email("e")])) == ["sub(\"u\") any", "email(\"e\") any"])
        #expect(keys(.other(format: "phone_number")).isEmpty)
        let narrowed = SubjectIdentifier.complex(user: .opaque("u"), session: .opaque("s")).revokedSubjects(
            issuers: issuers)
        #expect(narrowed.sid == "s" && narrowed.subjects.count == 1)
        #expect(keys(.complex(user: nil, session: .opaque("s"))) == ["session(\"s\") any"])
        // A user in a format the table cannot match: the session alone.
        #expect(keys(.complex(user: .other(format: "account"), session: .opaque("s"))) == ["session(\"s\") any"])
    }
}
