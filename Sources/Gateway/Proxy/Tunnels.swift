import Foundation
import JOSE
import Logging
import Reactor

/// An upgrade's terms, set by the stages that admit it (`RequestContext.tunnel`, in the
/// request's state): the key the upgrade went upstream with, which the upstream's 101 must
/// answer, and what ends the tunnel.
final class TunnelTerms {
    enum Key: RequestStateKey { typealias Value = TunnelTerms }
    var upstreamKey = ""
    /// On session routes: the login route whose session the tunnel re-checks, and when the
    /// session's absolute timeout ends it (Unix seconds).
    var session: (route: LoginRouteConfig, endsAt: Int64)? = nil
    /// On `close_at_token_expiry` routes: when the access token expires (Unix seconds).
    var tokenExpiry: Int64? = nil
    /// Who opened it, as a Shared Signals revocation names them: the token's or the session's
    /// claims, the `issuers:` entry that vouched, when the credential was issued.
    var caller: RevocationSubject? = nil
}

extension RequestContext {
    /// The upgrade's terms, made when a stage first sets one.
    var tunnel: TunnelTerms { state.value(TunnelTerms.Key.self, orMake: TunnelTerms.init) }
}

/// The tunnels of one worker: those open, their cap, and the watches that end them with
/// their session (re-checked through the session store every `sessionCheckInterval`, plus a
/// timer at the absolute timeout) or their access token (`close_at_token_expiry`), and those
/// a Shared Signals event revokes the caller of.
final class Tunnels {
    final class Entry {
        let tunnel: Tunnel
        let context: RequestContext
        let opened: Double
        /// Session routes: the route and the request's cookies, to ask again.
        let session: (route: LoginRouteConfig, cookies: Cookies)?
        /// At the session's absolute end or the token's expiry.
        var deadline: LoopTimer?
        var checking = false
        /// Who opened it, for Shared Signals revocations (`TunnelTerms.caller`).
        var caller: RevocationSubject?
        init(
            tunnel: Tunnel, context: RequestContext, opened: Double,
            session: (route: LoginRouteConfig, cookies: Cookies)?
        ) {
            self.tunnel = tunnel
            self.context = context
            self.opened = opened
            self.session = session
        }
    }

    var entries: [ObjectIdentifier: Entry] = [:]
    /// Upgrade requests accepted and not yet answered (authenticating, or waiting for the
    /// upstream's 101): counted against the cap too, so a burst of handshakes cannot
    /// overshoot it.
    var pending = 0
    /// Counters of tunnels already closed (open ones are added at snapshot time).
    var closed = TunnelMetrics()
    var sessionTimer: LoopTimer?
    private let loop: EventLoop
    private let log: Logger
    private let login: LoginService
    private let accessLog: AccessLogWriter?
    /// The worker's services, which hold these tunnels (set once, right after both are made).
    /// Unowned, not weak: a weak reference gives the services a side table, and every
    /// reference count of theirs on the request path would take its slow path.
    unowned(unsafe) var services: WorkerServices! = nil
    private var config: GatewayConfig { services.config }

    init(loop: EventLoop, log: Logger, login: LoginService, accessLog: AccessLogWriter?) {
        self.loop = loop
        self.log = log
        self.login = login
        self.accessLog = accessLog
    }

    /// This worker's share of `limits.max_tunnels`, as with `max_connections`.
    var cap: Int { max(1, (config.limits.maxTunnels + config.workers - 1) / config.workers) }

    /// How often session tunnels are re-checked: half the session cache's lifetime, so an
    /// ended session is seen within about 1.5 × `session.cache_ttl` on every replica.
    var sessionCheckInterval: Double { min(max(config.session.cacheTTL / 2, 0.5), 30) }

    /// The refusal of an upgrade request before anything else is done for it: the route's
    /// `upgrades:`, the request's shape, the tunnel cap.
    func refusal(_ ex: ServerExchange, route: RouteConfig, ctx: RequestContext) -> GatewayResponse? {
        if let (status, description, headers) = UpgradeExchange.refusal(ex.head, route: route, body: ex.body) {
            return ErrorResponse.make(
                status, error: "invalid_request", description: description, requestID: ctx.requestID,
                headers: headers)
        }
        if entries.count + pending >= cap {
            return ErrorResponse.make(
                503, error: "temporarily_unavailable", description: "too many WebSocket connections are open",
                requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: "limits.max_tunnels reached")
        }
        return nil
    }

    /// Counts an accepted upgrade request as pending until it is answered: by a 101 (the
    /// tunnel is registered right after, in the same call) or by anything else.
    func pending(_ ex: ServerExchange) {
        pending += 1
        let upgrade = PendingUpgrade(tunnels: self)
        upgrade.nextObserver = ex.responder.takeObserver(upgrade)
    }

    /// An upgrade request counted as pending until its answer completes.
    private final class PendingUpgrade: ResponderObserver {
        /// Unowned: the worker's tunnels outlive its requests.
        unowned let tunnels: Tunnels
        var nextObserver: (any ResponderObserver)?

        init(tunnels: Tunnels) { self.tunnels = tunnels }

        func completed(_ responder: Responder, flushed: Bool) {
            tunnels.pending -= 1
            nextObserver.take()?.completed(responder, flushed: flushed)
        }

        /// Not this one's to act on: passed to whoever it stands in front of.
        func clientGone(_ responder: Responder) { nextObserver?.clientGone(responder) }
    }

    /// Joins the client and the upstream after the 101 and starts the tunnel's watches.
    func open(client: TunnelEndpoint, upstream: TunnelEndpoint, ctx: RequestContext, head: HTTPRequestHead) {
        let tunnel = Tunnel(
            loop: loop, client: client, upstream: upstream, webSocket: true,
            idleTimeout: config.limits.tunnelIdleTimeout)
        let session = ctx.tunnel.session.map { (route: $0.route, cookies: Cookies(head.fields)) }
        let entry = Entry(tunnel: tunnel, context: ctx, opened: services.clock(), session: session)
        entry.caller = ctx.tunnel.caller
        let key = ObjectIdentifier(tunnel)
        tunnel.onClose = { [unowned self] reason, totals in self.tunnelClosed(key, reason, totals) }
        entries[key] = entry
        if let end = ctx.tunnel.session?.endsAt ?? ctx.tunnel.tokenExpiry {
            let reason: Tunnel.CloseReason = ctx.tunnel.session != nil ? .sessionEnded : .tokenExpired
            let phrase = ctx.tunnel.session != nil ? "session ended" : "access token expired"
            let wait = max(Double(end) - services.wallClock.now, 0)
            // Unowned: the entry owns both the timer and the tunnel, and cancels the timer
            // when the tunnel closes.
            entry.deadline = LoopTimer(loop: loop, seconds: wait) { [unowned(unsafe) tunnel] in
                tunnel.end(reason, code: WebSocketCloseFrame.policyViolation, phrase: phrase)
            }
        }
        if entry.caller != nil && revocationTimer == nil && !services.signals.all.isEmpty {
            revocationTimer = LoopTimer(loop: loop, seconds: Self.revocationCheckInterval, repeating: true) {
                [unowned self] in
                self.recheckRevocations()
            }
        }
        if session != nil && sessionTimer == nil {
            sessionTimer = LoopTimer(loop: loop, seconds: sessionCheckInterval, repeating: true) {
                [unowned self] in
                self.recheckSessions()
            }
        }
        tunnel.start()
    }

    /// How often open tunnels are held against new revocations (a tick with none new costs one
    /// atomic load).
    static let revocationCheckInterval = 0.25
    var revocationTimer: LoopTimer?
    private var checkedRevocations = -1

    /// Ends the tunnels whose caller a Shared Signals event has revoked since the last tick,
    /// with 1008 (RFC 6455 §7.4.1), as a logout ends a session's tunnel.
    private func recheckRevocations() {
        let version = services.signals.version.load(ordering: .acquiring)
        guard version != checkedRevocations else { return }
        checkedRevocations = version
        let now = services.wallClock.seconds
        for entry in entries.values {
            guard let caller = entry.caller, services.revocations.check(caller, now: now) != nil else { continue }
            log.info("tunnel caller revoked", metadata: ["request_id": .string(entry.context.requestID)])
            entry.tunnel.end(.revoked, code: WebSocketCloseFrame.policyViolation, phrase: "access revoked")
        }
    }

    /// Asks the session store about every session tunnel (one question at a time each).
    private func recheckSessions() {
        for entry in entries.values {
            guard let session = entry.session, !entry.checking else { continue }
            entry.checking = true
            login.recheck(route: session.route, cookies: session.cookies) { [weak entry] liveness in
                guard let entry else { return }
                entry.checking = false
                if case .ended(let why) = liveness {
                    self.log.info(
                        "tunnel session ended",
                        metadata: ["request_id": .string(entry.context.requestID), "why": .string(why)])
                    entry.tunnel.end(.sessionEnded, code: WebSocketCloseFrame.policyViolation, phrase: "session ended")
                }
            }
        }
    }

    private func tunnelClosed(_ key: ObjectIdentifier, _ reason: Tunnel.CloseReason, _ totals: Tunnel.Totals) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        entry.deadline?.cancel()
        if entries.values.allSatisfy({ $0.session == nil }) {
            sessionTimer?.cancel()
            sessionTimer = nil
        }
        if entries.values.allSatisfy({ $0.caller == nil }) {
            revocationTimer?.cancel()
            revocationTimer = nil
        }
        closed.bytesToUpstream += totals.toUpstream
        closed.bytesToClient += totals.toClient
        closed.closes[reason.rawValue, default: 0] += 1
        if let accessLog {
            let ctx = entry.context
            accessLog.record(
                TunnelLogRecord(
                    requestID: ctx.requestID, route: ctx.route, path: ctx.path, reason: reason.rawValue,
                    bytesToUpstream: totals.toUpstream, bytesToClient: totals.toClient,
                    durationMicros: Int(((services.clock() - entry.opened) * 1e6).rounded()), sub: ctx.caller?.subject)
            )
        }
        services.requestOrTunnelEnded()
    }

    /// Shutdown: every tunnel gets a Close 1001 (going away) and ends.
    func endAll() {
        for entry in Array(entries.values) {
            entry.tunnel.end(.shutdown, code: WebSocketCloseFrame.goingAway, phrase: "gateway shutting down")
        }
    }

    /// Tunnel counters with the open tunnels' bytes so far.
    var metrics: TunnelMetrics {
        var m = closed
        m.open = entries.count
        for entry in entries.values {
            let t = entry.tunnel.totals
            m.bytesToUpstream += t.toUpstream
            m.bytesToClient += t.toClient
        }
        return m
    }
}
