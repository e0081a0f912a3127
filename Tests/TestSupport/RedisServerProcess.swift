import Foundation
import Glibc
import Reactor

/// A real redis-server (the Debian package) on 127.0.0.1 for one test: started on a free
/// port, waited for until it accepts connections, killed when the test ends. The same
/// binary runs a Sentinel (`--sentinel`) or a cluster node with other arguments.
public final class RedisServerProcess {
    public struct StartError: Error, CustomStringConvertible { public let description: String }

    public let port: UInt16
    private let arguments: [String]
    private var process: Process?

    /// Starts a server with `extraArguments` appended (e.g. `["--requirepass", "pw"]`).
    public convenience init(_ extraArguments: [String] = []) throws {
        try self.init { port in RedisServerProcess.standardArguments(port: port) + extraArguments }
    }

    /// Starts redis-server with exactly the arguments `arguments` gives for the free port
    /// chosen (a TLS port, a Sentinel's configuration file).
    public init(arguments: (_ port: UInt16) throws -> [String]) throws {
        self.port = try RedisServerProcess.freePort()
        self.arguments = try arguments(port)
        try start()
    }

    /// Plain TCP on `port`, no persistence and no files; DEBUG allowed (Redis 7 disables it by
    /// default); ::1 too where the machine has it (the "-" makes that bind optional), for host
    /// names that resolve to IPv6 first.
    public static func standardArguments(port: UInt16) -> [String] {
        [
            "--port", String(port), "--bind", "127.0.0.1", "-::1", "--save", "", "--appendonly", "no",
            "--enable-debug-command", "yes", "--dir", NSTemporaryDirectory()
        ]
    }

    deinit { kill() }

    /// Starts (or restarts, on the same port) the server and waits until it accepts.
    public func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let until = Date().addingTimeInterval(5)
        while Date() < until {
            if RedisServerProcess.accepts(port: port) { return }
            guard p.isRunning else { break }
            usleep(20_000)
        }
        kill()
        throw StartError(description: "redis-server did not accept connections on port \(port)")
    }

    /// SIGKILL, as a crash: no shutdown, connections reset.
    public func kill() {
        guard let p = process else { return }
        process = nil
        if p.isRunning { Glibc.kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
    }

    /// A port nothing listens on now (the kernel's pick for port 0, released again).
    /// Below 55536, so that a cluster node's bus port (port + 10000) is a port too: the kernel's
    /// ephemeral range reaches 60999, where a cluster node could not start.
    public static func freePort() throws -> UInt16 {
        for _ in 0..<200 {
            let fd = try Listener.open(host: "127.0.0.1", port: 0)
            let port = Listener.port(of: fd)
            Glibc.close(fd)
            if port < 55_536 { return port }
        }
        throw StartError(description: "no free port below 55536")
    }

    private static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
