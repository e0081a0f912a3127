import Foundation

/// The wall clock (Unix time) that every decision by time reads: token `exp`/`nbf`/`iat` with
/// their leeway, DPoP proof windows and nonces, session idle and absolute timeouts and the
/// refresh margin, pending-login windows, the token and introspection caches, the unknown-`kid`
/// refetch limit. One per worker, given at construction, so a test moves time instead of
/// sleeping. What only measures the gateway itself (request durations, log timestamps) reads
/// the monotonic or real-time clock directly.
protocol WallClock: Sendable {
    /// Seconds since 1970-01-01T00:00:00Z, with a fraction.
    var now: Double { get }
}

extension WallClock {
    /// Whole seconds since the epoch: the unit of a JWT NumericDate (RFC 7519 §2) and of every
    /// session, nonce and cache timestamp here.
    var seconds: Int64 { Int64(now.rounded(.down)) }
}

/// The system's real-time clock.
struct SystemClock: WallClock {
    var now: Double { Date().timeIntervalSince1970 }
}
