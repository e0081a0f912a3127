import JOSE
import OAuth
import Reactor

/// One issuer's signing keys: fetched (OIDC Discovery / RFC 8414 metadata → `jwks_uri`, or a
/// configured `jwks_uri`), kept as an immutable `JWKSet`, refreshed before it goes stale, and
/// refetched at most once per `minRefetchInterval` when a token names an unknown `kid`.
/// A failed fetch keeps the last good set (stale-if-error). Lives on one loop (the main
/// loop); `onUpdate` hands each new set to the workers. One fetch serves every waiter.
final class IssuerKeys {
    enum Source: Equatable {
        /// The issuer URL; metadata from `<at ?? issuer>/.well-known/openid-configuration`,
        /// whose `issuer` is `issuer` or one of `alsoNamed` (a multi-tenant issuer's document,
        /// fetched under one tenant segment, names the template's other forms).
        case discovery(issuer: String, at: String? = nil, alsoNamed: [String] = [])
        case jwksURI(String)
    }

    struct Timing {
        /// Refresh interval bounds for the JWKS's Cache-Control max-age.
        var minRefresh = 60.0
        var maxRefresh = 3600.0
        /// An unknown kid may trigger a refetch at most this often.
        var minRefetchInterval = 30.0
        /// Retry delay after a failed fetch: doubles per consecutive failure, up to the max.
        var retryAfterError = 1.0
        var maxRetryAfterError = 30.0
    }

    let name: String
    let source: Source
    private let fetcher: HTTPFetcher
    private let loop: EventLoop
    private let timing: Timing
    private let wallClock: any WallClock
    private var now: Double { wallClock.now }
    private(set) var current: JWKSet?
    private(set) var lastError: String?
    private(set) var fetchCount = 0
    private var jwksURI: String?
    /// Discovery metadata (RFC 8414 §2, OIDC Discovery), when the issuer publishes one: the
    /// introspection endpoint for opaque tokens, the endpoints of the login round-trip.
    private(set) var metadata: ProviderMetadata?
    private var inFlight = false
    private var waiters: [(Bool) -> Void] = []
    private var lastKidRefetch = -Double.infinity
    private var refreshTimer: LoopTimer?
    private var consecutiveFailures = 0
    private(set) var failureCount = 0
    private(set) var lastSuccessAt: Double?
    var onUpdate: ((JWKSet) -> Void)?
    var onError: ((String) -> Void)?

    init(
        name: String, source: Source, fetcher: HTTPFetcher, loop: EventLoop, timing: Timing = Timing(),
        wallClock: any WallClock
    ) {
        self.name = name
        self.source = source
        self.fetcher = fetcher
        self.loop = loop
        self.timing = timing
        self.wallClock = wallClock
        if case .jwksURI(let uri) = source { jwksURI = uri }
    }

    /// Loads the keys now; `done(ok)` when the first attempt ends.
    func start(_ done: @escaping (Bool) -> Void = { _ in }) { fetch(done) }

    /// A token named a kid the current set lacks. Refetches unless one happened within
    /// `minRefetchInterval` (a flood of made-up kids must not become load on the IdP);
    /// `done(true)` when a new set arrived, `done(false)` when nothing changed.
    func refetchForUnknownKid(_ done: @escaping (Bool) -> Void) {
        if inFlight {
            waiters.append(done)
            return
        }
        guard now - lastKidRefetch >= timing.minRefetchInterval else {
            done(false)
            return
        }
        lastKidRefetch = now
        fetch(done)
    }

    private func fetch(_ done: @escaping (Bool) -> Void) {
        waiters.append(done)
        guard !inFlight else { return }
        inFlight = true
        if let uri = jwksURI {
            fetchJWKS(uri)
        } else if case .discovery(let issuer, let at, let alsoNamed) = source {
            let base = at ?? issuer
            let url = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/.well-known/openid-configuration"
            discover(url, issuer: issuer, alsoNamed: alsoNamed, thenTry: base == issuer ? Self.rfc8414URL(issuer) : nil)
        }
    }

    /// RFC 8414 §3.1's metadata URL: the well-known path between the host and the issuer's
    /// path. An OAuth authorization server that is no OpenID provider (tokengate's own, for
    /// one) publishes only this.
    static func rfc8414URL(_ issuer: String) -> String? {
        guard let scheme = issuer.range(of: "://") else { return nil }
        let rest = issuer[scheme.upperBound...]
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var path = String(rest[slash...])
        if path.hasSuffix("/") { path.removeLast() }
        return String(issuer[..<slash]) + "/.well-known/oauth-authorization-server" + path
    }

    /// Fetches the metadata at `url`; when that answers 404, at `thenTry`.
    private func discover(_ url: String, issuer: String, alsoNamed: [String], thenTry: String?) {
        fetcher.fetch(FetchRequest(url: url, headers: ["Accept: application/json"], bound: CallBounds.keys)) {
            [weak self] result in
            guard let self else { return }
            if case .success(let resp) = result, resp.status == 404, let next = thenTry {
                return self.discover(next, issuer: issuer, alsoNamed: alsoNamed, thenTry: nil)
            }
            if case .success(let resp) = result, resp.status == 200,
                let meta = try? ProviderMetadata.parse(resp.body, expectedIssuer: issuer, alsoNamed: alsoNamed)
            {
                self.metadata = meta
            }
            switch result.flatMap(Self.metadataJWKSURI(issuer: issuer, alsoNamed: alsoNamed)) {
            case .success(let uri):
                self.jwksURI = uri
                self.fetchJWKS(uri)
            case .failure(let e):
                self.finish(nil, maxAge: nil, error: "discovery: \(e.description)")
            }
        }
    }

    private func fetchJWKS(_ uri: String) {
        fetchCount += 1
        fetcher.fetch(
            FetchRequest(
                url: uri, headers: ["Accept: application/json, application/jwk-set+json"], bound: CallBounds.keys)
        ) {
            [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let resp) where resp.status == 200:
                do {
                    let set = try JWKSet(bytes: resp.body)
                    self.finish(set, maxAge: Self.maxAge(resp.header("cache-control")), error: nil)
                } catch {
                    self.finish(nil, maxAge: nil, error: "jwks: \(error)")
                }
            case .success(let resp):
                self.finish(nil, maxAge: nil, error: "jwks: HTTP \(resp.status)")
            case .failure(let e):
                self.finish(nil, maxAge: nil, error: "jwks: \(e.description)")
            }
        }
    }

    private func finish(_ set: JWKSet?, maxAge: Double?, error: String?) {
        inFlight = false
        if let set {
            current = set
            lastError = nil
            lastSuccessAt = now
            onUpdate?(set)
        } else if let error {
            // Stale-if-error: the last good set keeps serving.
            lastError = error
            failureCount += 1
            onError?(error)
        }
        consecutiveFailures = set != nil ? 0 : consecutiveFailures + 1
        let delay =
            set != nil
            ? min(max(maxAge ?? timing.maxRefresh, timing.minRefresh), timing.maxRefresh)
            : min(timing.retryAfterError * Double(1 << min(consecutiveFailures - 1, 10)), timing.maxRetryAfterError)
        refreshTimer?.cancel()
        refreshTimer = LoopTimer(loop: loop, seconds: delay) { [weak self] in self?.fetch { _ in } }
        let pending = waiters
        waiters = []
        for w in pending { w(set != nil) }
    }

    /// RFC 8414 §3 / OIDC Discovery §4.3: the metadata's `issuer` must equal the configured
    /// issuer exactly, and `jwks_uri` must be an https (or, for local setups, http) URL.
    static func metadataJWKSURI(issuer: String, alsoNamed: [String] = []) -> (FetchResponse) -> Result<
        String, FetchError
    > {
        { resp in
            guard resp.status == 200 else { return .failure(FetchError(description: "HTTP \(resp.status)")) }
            guard let meta = try? JSONParser.parse(resp.body).object else {
                return .failure(FetchError(description: "metadata is not a JSON object"))
            }
            guard let said = meta["issuer"]?.string, said == issuer || alsoNamed.contains(said) else {
                return .failure(FetchError(description: "metadata issuer does not match \(issuer)"))
            }
            guard let uri = meta["jwks_uri"]?.string, uri.hasPrefix("https://") || uri.hasPrefix("http://") else {
                return .failure(FetchError(description: "metadata has no usable jwks_uri"))
            }
            return .success(uri)
        }
    }

    /// `max-age` from a Cache-Control value, if any (no-store/no-cache → 0).
    static func maxAge(_ header: String?) -> Double? {
        guard let header else { return nil }
        var age: Double?
        for part in header.split(separator: ",") {
            let p = part.trimmingLeadingSpaces().lowercased()
            if p == "no-store" || p == "no-cache" { return 0 }
            if p.hasPrefix("max-age="), let v = Double(p.dropFirst(8)), v >= 0 { age = v }
        }
        return age
    }
}

extension Substring {
    fileprivate func trimmingLeadingSpaces() -> Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
