import Reactor

/// Which of a client's request trailer fields (a chunked body's, or an HTTP/2 stream's
/// trailing HEADERS) reach the upstream. They arrive after the head was judged, and a server
/// may merge them into the header section (RFC 9110 §6.5.2), so they pass only what the head
/// would pass from a client that is not a trusted proxy, carry no credential and no copy of
/// an identity header, and are none of the fields RFC 9110 §6.5.1 keeps out of trailers.
extension RouteResolver.Policy: RequestTrailerPolicy {
    /// RFC 9110 §6.5.1: fields that frame or route the message, modify the request
    /// (controls, conditionals, range), authenticate it, or describe its content; and
    /// response-only fields that have no place in a request.
    static let notTrailers: [[UInt8]] = [
        "host", "content-length", "content-type", "content-encoding", "content-range", "content-location",
        "cache-control", "expect", "max-forwards", "pragma", "range", "if-match", "if-none-match",
        "if-modified-since", "if-unmodified-since", "if-range", "authorization", "cookie", "dpop",
        "set-cookie", "www-authenticate", "age", "date", "expires", "location", "retry-after", "vary"
    ].map { Array($0.utf8) }

    func forwardsTrailer(_ name: Span<UInt8>) -> Bool {
        let lists = names.lists(name)
        if !lists.isDisjoint(with: [.identity, .credential, .authorization, .dpop, .cookie]) { return false }
        if HeaderRules.equalsAny(name, Self.notTrailers) { return false }
        return HeaderRules.forwardsRequestHeader(
            name, lists: lists, listed: [], reservedPrefix: reservedPrefix, peerTrusted: false)
    }
}

/// A request whose trailer section drops names beyond the config's: those its `Connection`
/// field lists (RFC 9110 §7.6.1: hop-by-hop in the trailers too, as in the head), and those
/// the route owns (its API keys' fields, its upstream credential's), which no client copy
/// may reach the upstream in, head or trailers. Made only for such a request.
final class DroppingTrailerPolicy: RequestTrailerPolicy {
    let policy: RouteResolver.Policy
    let dropped: [[UInt8]]

    init(_ policy: RouteResolver.Policy, dropped: [[UInt8]]) {
        self.policy = policy
        self.dropped = dropped
    }

    func forwardsTrailer(_ name: Span<UInt8>) -> Bool {
        !HeaderRules.equalsAny(name, dropped) && policy.forwardsTrailer(name)
    }
}
