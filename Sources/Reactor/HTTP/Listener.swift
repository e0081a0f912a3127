internal import CShim
import Glibc

/// Listening sockets with SO_REUSEPORT, one per worker on the same address, so the kernel
/// spreads new connections across the workers' loops.
public enum Listener {
    /// Opens a listening socket on `host:port`; the caller hands it to `ExchangeServer.serve`.
    public static func open(host: String, port: UInt16, backlog: Int32 = 1024) throws -> Int32 {
        let fd = tg_reuseport_listener(host, port, backlog)
        guard fd >= 0 else {
            throw ReactorError("cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// Fails when a socket already listens on `host:port`. The workers' sockets share their
    /// address (SO_REUSEPORT), and so would those of any other process of the same user that
    /// asked for it: a second gateway started on a port an older one still holds would take
    /// a share of its connections, two configurations serving one address. One bind
    /// without SO_REUSEPORT, before the first worker's socket, makes that an error instead,
    /// as nginx's "Address already in use". (Port 0 asks for a free port: nothing to check.)
    /// The probe is closed before the workers' sockets open, so two starts in the same moment
    /// could both pass it; a start beside a running gateway cannot.
    public static func claim(host: String, port: UInt16) throws {
        guard port != 0, tg_listen_address_free(host, port) != 0 else { return }
        let reason = errno == EADDRINUSE ? "address in use" : String(cString: strerror(errno))
        throw ReactorError("cannot listen on \(host):\(port): \(reason)")
    }

    /// The local port a socket is bound to (after binding port 0 for a free one).
    public static func port(of fd: Int32) -> UInt16 {
        var addr = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }
}
