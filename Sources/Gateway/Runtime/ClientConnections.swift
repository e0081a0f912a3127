import Reactor

/// The open client connections of one worker (loop-thread only): how many there are (for
/// `/metrics`), which exchange is streaming on each (told when the client goes), and how
/// many replies on each are not yet flushed (in-flight accounting for drain: a reply that
/// will never flush because its client left must not hold the drain up).
final class ClientConnections {
    final class Watch {
        var handler: CloseHandler?
        weak var exchange: ProxyExchange?
        var unflushed = 0
        /// The TCP peer, read once per connection.
        var peer = ""
        /// Whether `peer` is a trusted proxy, as of config `trustGeneration`.
        var trusted = false
        var trustGeneration = -1
    }

    private var open: [ClientConnectionID: Watch] = [:]
    var count: Int { open.count }

    /// The watch for the connection `req` arrived on, registering one on first sight.
    /// `closed(unflushed)` runs when the connection goes away.
    func watch(_ req: ServerRequest, closed: @escaping (_ unflushed: Int) -> Void) -> Watch? {
        guard let id = req.connection else { return nil }
        if let w = open[id] { return w }
        let w = Watch()
        w.peer = req.peerAddress
        // `w` owns its handler; the handler holds `w` weakly (no cycle), and `open` holds `w`
        // until the close: take it out first, keep it alive through the callback.
        w.handler = CloseHandler { [unowned self, weak w] in
            guard let w, let gone = self.open.removeValue(forKey: id) else { return }
            withExtendedLifetime(gone) {
                w.exchange?.clientClosed()
                closed(w.unflushed)
            }
        }
        req.onClientClose(w.handler!)
        open[id] = w
        return w
    }

    func flushed(_ id: ClientConnectionID?) {
        if let id, let w = open[id] { w.unflushed -= 1 }
    }

    /// The connection is being cut by us (mid-stream upstream failure): no close callback
    /// will come, so forget it here.
    func forget(_ id: ClientConnectionID?) -> Int {
        guard let id, let w = open.removeValue(forKey: id) else { return 0 }
        w.handler = nil
        return w.unflushed
    }
}
