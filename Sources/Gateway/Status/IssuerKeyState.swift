/// An issuer's keys as the status page shows them: which key ids are held and how fetching
/// them goes. Key ids and times only; the keys themselves are never shown.
struct IssuerKeyState: Sendable {
    var loaded = false
    /// `kid` of each key held (a key without one is named by its type).
    var keyIDs: [String] = []
    /// Wall-clock seconds of the last successful fetch (or read, for `jwks_file`).
    var lastFetch: Double?
    /// The last fetch failed: the last good keys keep serving.
    var failing = false
    /// The latest failure, kept after later successes.
    var lastError: (at: Double, error: String)?
    /// Failed fetches since the issuer was configured.
    var failures = 0
}
