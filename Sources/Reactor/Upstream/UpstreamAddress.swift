internal import CEvent
import Glibc

/// One socket address of an upstream (IPv4 or IPv6), as `connect(2)` takes it.
struct UpstreamAddress {
    private var storage: sockaddr_storage
    private let length: socklen_t

    var family: Int32 { Int32(storage.ss_family) }

    /// An IPv4 or IPv6 literal ("10.0.0.7", "::1", "[::1]") with `port`; nil for a name.
    init?(numeric host: String, port: UInt16) {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let literal = bare.contains(":") ? "[\(bare)]:\(port)" : "\(bare):\(port)"
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { evutil_parse_sockaddr_port(literal, $0, &length) }
        }
        guard rc == 0 else { return nil }
        self.storage = storage
        self.length = socklen_t(length)
    }

    /// A copy of a resolver's answer.
    init(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        var storage = sockaddr_storage()
        let n = min(Int(length), MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: n)) }
        self.storage = storage
        self.length = socklen_t(n)
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) } }
    }
}

/// One asynchronous name lookup on a loop's resolver (`evdns_getaddrinfo`): the worker never
/// blocks in getaddrinfo. `done` runs once on the loop thread (possibly before `start`
/// returns, for /etc/hosts answers) with the addresses in the resolver's order, or an
/// empty list; never after `cancel()`.
final class UpstreamLookup {
    private var request: OpaquePointer?
    private var done: (([UpstreamAddress]) -> Void)?

    private init(done: @escaping ([UpstreamAddress]) -> Void) { self.done = done }

    /// nil: no resolver on this loop (`done` is not called).
    static func start(
        loop: EventLoop, host: String, port: UInt16,
        _ done: @escaping ([UpstreamAddress]) -> Void
    ) -> UpstreamLookup? {
        guard let dns = loop.dnsBase else { return nil }
        let lookup = UpstreamLookup(done: done)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        // Retained for libevent's one callback (an answer, a failure or the cancellation);
        // `lookupThunk` takes it back.
        let context = Unmanaged.passRetained(lookup).toOpaque()
        // NULL: the callback has run already (hosts file, an immediate failure).
        lookup.request = evdns_getaddrinfo(dns, host, String(port), &hints, lookupThunk, context)
        return lookup
    }

    /// Abandons the lookup; `done` is not called.
    func cancel() {
        done = nil
        if let request {
            self.request = nil
            // libevent still runs the callback once (EVUTIL_EAI_CANCEL, on a later loop
            // turn); that releases the context, and `done` is gone by then.
            evdns_getaddrinfo_cancel(request)
        }
    }

    fileprivate func answered(_ result: Int32, _ list: UnsafeMutablePointer<addrinfo>?) {
        request = nil
        var addresses: [UpstreamAddress] = []
        var node = result == 0 ? list : nil
        while let n = node {
            if let address = n.pointee.ai_addr {
                addresses.append(UpstreamAddress(address, length: n.pointee.ai_addrlen))
            }
            node = n.pointee.ai_next
        }
        if let list { evutil_freeaddrinfo(list) }
        let done = self.done
        self.done = nil
        done?(addresses)
    }
}

private func lookupThunk(_ result: Int32, _ list: UnsafeMutablePointer<addrinfo>?, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<UpstreamLookup>.fromOpaque(arg!).takeRetainedValue().answered(result, list)
}
