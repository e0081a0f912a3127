import Foundation
import Glibc

/// Runs a command-line tool (openssl, redis-cli) to its end, at most `timeout` seconds, and
/// returns what it printed. For test fixtures: outputs are small (a pipe's 64 KiB buffer is
/// read after the exit).
public enum ProcessRunner {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], timeout: Double = 10) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let until = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < until { usleep(5_000) }
        if p.isRunning {
            Glibc.kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")): no exit within \(timeout) s")
        }
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard p.terminationStatus == 0 else {
            let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw Failure(
                description:
                    "\(executable) \(arguments.joined(separator: " ")) exited \(p.terminationStatus): \(message)\(output)"
            )
        }
        return output
    }

    /// `redis-cli -p port args…` (a password via REDISCLI_AUTH would need the environment;
    /// `-a` with `--no-auth-warning` keeps it off stderr).
    @discardableResult
    public static func redisCLI(port: UInt16, password: String? = nil, _ arguments: [String], timeout: Double = 10)
        throws -> String
    {
        let auth = password.map { ["-a", $0, "--no-auth-warning"] } ?? []
        return try run(
            "/usr/bin/redis-cli", ["-h", "127.0.0.1", "-p", String(port)] + auth + arguments, timeout: timeout)
    }

    /// Polls `condition` every 50 ms for at most `timeout` seconds; whether it became true.
    public static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let until = Date().addingTimeInterval(timeout)
        repeat {
            if condition() { return true }
            usleep(50_000)
        } while Date() < until
        return condition()
    }
}
