internal import CShim
import Glibc

/// Listening sockets with SO_REUSEPORT, one per worker on the same address, so the kernel
/// spreads new connections across the workers' loops.
public enum Listener {
    /// Opens a listening socket on `host:port`; the caller hands it to `HTTPServer.serve`.
    public static func open(host: String, port: UInt16, backlog: Int32 = 1024) throws -> Int32 {
        let fd = tg_reuseport_listener(host, port, backlog)
        guard fd >= 0 else {
            throw ReactorError("cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        return fd
    }
}
