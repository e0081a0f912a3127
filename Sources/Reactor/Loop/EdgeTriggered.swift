internal import CEvent

/// Plain client sockets are watched by edge (EPOLLET), as nginx watches them. Level-triggered,
/// epoll looks again at every socket it reported, on the next wait, to see whether it is
/// still readable: two more socket polls a proxied request, and more wake-ups (perf put
/// epoll's share at 0.46 µs a request against nginx's 0.28).
///
/// An edge is reported once, so a reader must not stop while bytes may still be waiting:
/// - a read that took all the room it asked for may have left more: the reader reads again
///   on the next loop turn (`event_active`), as level-triggering would have made it;
/// - a shorter read emptied the socket, except that the peer's FIN can have come with the
///   last bytes, in the same edge. `EV_CLOSED` (EPOLLRDHUP) says it did; from then on
///   every read that got bytes is followed by one more, which sees the end.
/// - A reader that pauses deletes its read event; adding it again makes epoll look at
///   the socket at once (EPOLL_CTL_ADD/MOD), so bytes that came meanwhile are reported.
///
/// What an edge does not tell: libevent 2.1 reports EPOLLERR as plain `EV_READ | EV_WRITE`,
/// without `EV_CLOSED`, so a reset (RST) that comes in the same edge as the last bytes is
/// not seen until a write fails or a deadline passes. From a client that is a client that
/// stalls, which the header, body and idle deadlines already bound; a tunnel has no such
/// deadline, so a client socket is watched by level once it carries one
/// (`ServerConnection.watchByLevel`). From an upstream it would hold an answer whose body
/// ends with the connection until the response timeout, so upstream sockets stay
/// level-triggered. TLS sockets do too: OpenSSL reads records ahead,
/// and its `SSL_read` leaves the socket on its own terms. libevent refuses to mix both
/// kinds on one fd, so a socket's read and write events are either both edge-triggered or
/// neither.
enum EdgeTriggered {
    /// Whether `base`'s backend reports edges and the peer's FIN (epoll does; the others
    /// libevent may fall back to do not).
    static func supported(_ base: OpaquePointer) -> Bool {
        let wanted = Int32(EV_FEATURE_ET.rawValue | EV_FEATURE_EARLY_CLOSE.rawValue)
        return Int32(event_base_get_features(base)) & wanted == wanted
    }

    static let readFlags = Int16(EV_ET | EV_CLOSED)
    static let writeFlags = Int16(EV_ET)

    /// The callback's `what` says the peer sent its FIN.
    static func peerEnded(_ what: Int16) -> Bool { what & Int16(EV_CLOSED) != 0 }
}
