import ArgumentParser
import Foundation
import Gateway
import Logging

/// The `tokengate` command line: `serve` (default), `check-config`, `version`, and the
/// JOSE developer tools (`jwt`, `keys`).
@main
struct Tokengate: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "tokengate",
        abstract: "A reverse-proxy token gateway: OAuth 2.0 / OpenID Connect in front of unmodified upstreams.",
        version: version,
        subcommands: [Serve.self, CheckConfig.self, Version.self] + Tokengate.toolCommands,
        defaultSubcommand: Serve.self)
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway.")

    @Option(name: .shortAndLong, help: "The YAML config file.")
    var config: String = "config/tokengate.yaml"

    func run() throws {
        // A SIGHUP before the reload watcher is installed (a config management tool that
        // signals as soon as the process exists) would end the process by default; until
        // then it is ignored, and the config read now is the newest anyway.
        signal(SIGHUP, SIG_IGN)
        // The same for logrotate's SIGUSR1 (reopen the access log), whose default also ends it.
        signal(SIGUSR1, SIG_IGN)
        // Once, before anything else starts: the allocator's cache depth (see there).
        AllocatorTuning.applyByRunningAgain()
        let config: GatewayConfig
        switch ConfigParser.load(path: self.config) {
        case .success(let c): config = c
        case .failure(let err):
            FileHandle.standardError.write(Data("tokengate: \(self.config) has problems:\n\(err.description)\n".utf8))
            throw ExitCode(2)
        }
        let level = Logger.Level(rawValue: config.logLevel) ?? .info
        LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: level) }
        let log = Logger(label: "tokengate")
        // Log lines are written by the sinks' threads: the last ones go out before exit.
        defer { GatewayServer.closeStandardLogs() }
        do {
            try GatewayServer(config: config, configPath: self.config, log: log, version: Tokengate.version).run()
        } catch {
            log.critical("cannot start", metadata: ["error": .string("\(error)")])
            throw ExitCode(1)
        }
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a config file; exit 0 if valid, 1 with every problem listed if not.")

    @Argument(help: "The YAML config file.")
    var file: String

    func run() throws {
        switch ConfigParser.load(path: file) {
        case .success(let c):
            print("\(file): ok (\(c.routeCount) routes, \(c.upstreamCount) upstreams, \(c.workers) workers)")
            for w in c.warnings { print("  warning: \(w)") }
            for n in c.presetNotes { print("  preset: \(n)") }
        case .failure(let err):
            print("\(file): \(err.problems.count) problem\(err.problems.count == 1 ? "" : "s"):")
            for p in err.problems { print("  - \(p)") }
            throw ExitCode(1)
        }
    }
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the version.")
    func run() { print("tokengate \(Tokengate.version)") }
}
