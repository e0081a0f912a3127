import OAuth

/// What the Shared Signals events received so far say about subjects: which tokens and
/// sessions of whom no longer pass. A request's token or session is checked against it with
/// one lookup by `sub` (and one by `email`, only while an event named an email): no store
/// round-trip on the request path. Each entry stands until `revocation_ttl` after its last
/// event, which outlives every token and session it could refuse.
struct RevocationTable: Sendable {
    /// Who an event is about, as a token or a session names them.
    enum Subject: Hashable, Sendable {
        case sub(String)
        case email(String)
        /// A session named without its user (a complex subject with only `session`).
        case session(String)

        /// Emails compare case-insensitively (their domain always does; a mailbox that only
        /// differs in case is one user at every IdP that matters).
        var normalized: Subject {
            if case .email(let e) = self { return .email(e.lowercased()) }
            return self
        }
    }

    /// What stands against one subject, for tokens of one issuer (or of any of the
    /// transmitter's issuers: `anyIssuer`).
    struct Standing: Sendable, Equatable {
        /// Tokens and sessions issued before this (seconds since 1970) are refused; 0: none.
        var before: Int64 = 0
        /// `account-disabled`: every token and session, whatever its age, until enabled.
        var disabled = false
        /// When the account's last `account-disabled` or `account-enabled` happened: an older
        /// one arriving late (a retry, a replay) changes nothing.
        var enablementAt = Int64.min
        /// Session-narrowed revocations: a token or session with this `sid`, issued before the time.
        var sessions: [String: Int64] = [:]
        /// `token-claims-change`: tokens issued before this no longer say what the IdP says;
        /// a session whose tokens are older refreshes them. 0: none.
        var claimsChangedBefore: Int64 = 0
        /// The `jti` of the last event that changed it: the server span of a refused request
        /// names it.
        var jti: String?

        func refuses(iat: Int64?, sid: String?) -> Revoked? {
            if disabled { return .disabled }
            // A token that does not say when it was issued cannot be shown to postdate the event.
            // Issued in the event's second counts as before it: a token cannot be shown to
            // postdate it, and a new one is a second away.
            if before > 0 && (iat ?? Int64.min) <= before { return .revoked }
            if let sid, let t = sessions[sid], (iat ?? Int64.min) <= t { return .revoked }
            if claimsChangedBefore > 0 && (iat ?? Int64.min) <= claimsChangedBefore { return .claimsChanged }
            return nil
        }
    }

    /// Why a token or session no longer passes.
    enum Revoked: Sendable, Equatable {
        case revoked
        case disabled
        /// Its claims changed at the IdP: a token is refused; a session refreshes its tokens.
        case claimsChanged
    }

    /// An event's effect on one subject.
    enum Effect: Sendable, Equatable {
        /// Tokens and sessions issued before `at` end; with `sid`, only those of that session.
        case revoke(at: Int64, sid: String?)
        /// Tokens issued before `at` no longer carry the IdP's claims.
        case claimsChange(at: Int64)
        case disable(at: Int64)
        case enable(at: Int64)
    }

    /// One subject's change by one event: what `apply` records, and what the store's log
    /// carries to the other replicas (`RevocationLog`).
    struct Change: Sendable, Equatable {
        var effect: Effect
        var subject: Subject
        /// The `issuers:` entry it binds to; nil: any of the transmitter's.
        var issuer: String?
        var until: Int64
        /// The SET that made it.
        var jti: String? = nil
    }

    private struct Entry: Sendable {
        /// By issuer URL; the key "" holds what applies to any of the transmitter's issuers.
        var byIssuer: [String: Standing] = [:]
        var until: Int64
    }

    private var entries: [Subject: Entry] = [:]
    static let sessionsPerSubject = 64
    /// How many entries are keyed by an email, or by a session alone: a token's email and
    /// `sid` are looked up only while there are some.
    private var emails = 0
    private var sessionsAlone = 0
    let capacity: Int

    init(capacity: Int = 1_000_000) { self.capacity = capacity }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// Records `effect` for `subject` (of `issuer`, or any of the transmitter's: nil) until
    /// `until`. False when the table is full even of entries that still stand.
    @discardableResult
    mutating func apply(
        _ effect: Effect, to subject: Subject, issuer: String?, until: Int64, now: Int64, jti: String? = nil
    ) -> Bool {
        let subject = subject.normalized
        if entries[subject] == nil {
            if entries.count >= capacity { purge(now: now) }
            guard entries.count < capacity else { return false }
            if case .email = subject { emails += 1 }
            if case .session = subject { sessionsAlone += 1 }
        }
        var entry = entries[subject] ?? Entry(until: until)
        entry.until = max(entry.until, until)
        var standing = entry.byIssuer[issuer ?? ""] ?? Standing()
        switch effect {
        case .revoke(let at, nil): standing.before = max(standing.before, at)
        case .revoke(let at, let sid?):
            // Bounded: a flood of session-narrowed events about one user drops the oldest.
            if standing.sessions.count >= Self.sessionsPerSubject, standing.sessions[sid] == nil,
                let oldest = standing.sessions.min(by: { $0.value < $1.value })
            {
                standing.sessions[oldest.key] = nil
            }
            standing.sessions[sid] = max(standing.sessions[sid] ?? 0, at)
        case .claimsChange(let at): standing.claimsChangedBefore = max(standing.claimsChangedBefore, at)
        case .disable(let at), .enable(let at):
            // Only for the issuer it names (a `sub` is one issuer's), and only if newer than
            // the last change.
            if at >= standing.enablementAt {
                standing.enablementAt = at
                if case .disable = effect { standing.disabled = true } else { standing.disabled = false }
            }
        }
        if let jti { standing.jti = jti }
        entry.byIssuer[issuer ?? ""] = standing
        entries[subject] = entry
        return true
    }

    /// Records a change; false when the table is full even of entries that still stand.
    @discardableResult
    mutating func apply(_ change: Change, now: Int64) -> Bool {
        apply(change.effect, to: change.subject, issuer: change.issuer, until: change.until, now: now, jti: change.jti)
    }

    /// The `jti` of the event behind `check`'s refusal of the same token or session (looked up
    /// again only for a refused request).
    func jti(sub: String?, email: String?, issuer: String, iat: Int64?, sid: String?, now: Int64) -> String? {
        let subjects: [Subject?] = [
            sub.map { .sub($0) }, email.map { .email($0.lowercased()) }, sid.map { .session($0) }
        ]
        for case let subject? in subjects {
            guard let entry = entries[subject], entry.until > now else { continue }
            for standing in [entry.byIssuer[issuer], entry.byIssuer[""]] {
                if let standing, standing.refuses(iat: iat, sid: sid) != nil { return standing.jti }
            }
        }
        return nil
    }

    /// Whether a token or session of `sub` (and `email`) from `issuer`, issued at `iat`, in
    /// session `sid`, is refused now.
    /// The most severe refusal any entry naming them gives: a claims change under one
    /// identifier never hides a revocation under another (a session refreshed for the change
    /// must still end for the revocation).
    func check(sub: String?, email: String?, issuer: String, iat: Int64?, sid: String?, now: Int64) -> Revoked? {
        if entries.isEmpty { return nil }
        var found: Revoked?
        if let sub, let hit = refusal(.sub(sub), issuer: issuer, iat: iat, sid: sid, now: now) {
            if hit != .claimsChanged { return hit }
            found = hit
        }
        if emails > 0, let email,
            let hit = refusal(.email(email.lowercased()), issuer: issuer, iat: iat, sid: sid, now: now)
        {
            if hit != .claimsChanged { return hit }
            found = hit
        }
        if sessionsAlone > 0, let sid, let hit = refusal(.session(sid), issuer: issuer, iat: iat, sid: sid, now: now) {
            if hit != .claimsChanged { return hit }
            found = hit
        }
        return found
    }

    private func refusal(_ subject: Subject, issuer: String, iat: Int64?, sid: String?, now: Int64) -> Revoked? {
        guard let entry = entries[subject], entry.until > now else { return nil }
        let own = entry.byIssuer[issuer]?.refuses(iat: iat, sid: sid)
        if let own, own != .claimsChanged { return own }
        return entry.byIssuer[""]?.refuses(iat: iat, sid: sid) ?? own
    }

    /// Drops the entries whose time is over.
    mutating func purge(now: Int64) {
        entries = entries.filter { $0.value.until > now }
        emails = entries.keys.reduce(0) { n, s in if case .email = s { n + 1 } else { n } }
        sessionsAlone = entries.keys.reduce(0) { n, s in if case .session = s { n + 1 } else { n } }
    }
}

extension RevocationTable.Effect {
    /// The same effect, its time no later than `now`.
    func happened(notAfter now: Int64) -> Self {
        switch self {
        case .revoke(let at, let sid): .revoke(at: min(at, now), sid: sid)
        case .claimsChange(let at): .claimsChange(at: min(at, now))
        case .disable(let at): .disable(at: min(at, now))
        case .enable(let at): .enable(at: min(at, now))
        }
    }

    /// What an event does to its subject's tokens and sessions (none for the stream's own
    /// events and types without effect). `token-claims-change` refuses earlier tokens too (their
    /// claims are no longer what the IdP says), but a session refreshes rather than ends.
    init?(_ token: SecurityEventToken, session sid: String?) {
        switch token.event.type {
        case .sessionRevoked, .credentialChange, .credentialCompromise, .accountPurged:
            self = .revoke(at: token.eventTime, sid: sid)
        case .tokenClaimsChange: self = .claimsChange(at: token.eventTime)
        case .accountDisabled: self = .disable(at: token.eventTime)
        case .accountEnabled: self = .enable(at: token.eventTime)
        case .verification, .streamUpdated, .other: return nil
        }
    }
}

extension SubjectIdentifier {
    /// The subjects this identifier names, each with the issuer it is bound to (nil: any of the
    /// transmitter's), and the session a complex subject narrows the event to. `issuers`: the
    /// transmitter's issuers' URLs; an `iss_sub` of another issuer names nobody here.
    func revokedSubjects(issuers: Set<String>) -> (subjects: [(RevocationTable.Subject, issuer: String?)], sid: String?)
    {
        switch self {
        case .email(let e): return ([(.email(e), nil)], nil)
        case .opaque(let id): return ([(.sub(id), nil)], nil)
        case .issSub(let iss, let sub): return issuers.contains(iss) ? ([(.sub(sub), iss)], nil) : ([], nil)
        case .aliases(let all):
            return (all.flatMap { $0.revokedSubjects(issuers: issuers).subjects }, nil)
        case .complex(let user, let session):
            var sid: String?
            if case .opaque(let id)? = session { sid = id }
            let users = user?.revokedSubjects(issuers: issuers).subjects ?? []
            // A user named in a format this table cannot match: the session alone, when there is one.
            guard !users.isEmpty else { return (sid.map { [(.session($0), nil)] } ?? [], nil) }
            // A session in another format cannot be matched to a sid: the whole user (wider,
            // never narrower, than the event asked).
            return (users, sid)
        case .other: return ([], nil)
        }
    }
}
