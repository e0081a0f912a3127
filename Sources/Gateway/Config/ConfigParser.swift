import Foundation
import OAuth
import Reactor
import Yams

/// YAML text → validated `GatewayConfig`, or every problem at once (data → validation →
/// bootstrap; every key in docs/configuration.md). Pure apart from reading `*_file` secrets.
public enum ConfigParser {
    static func parse(
        yaml: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        baseDirectory: String = ".", cores: Int = ProcessInfo.processInfo.activeProcessorCount,
        modules: ModuleCatalog = .gateway
    )
        -> Result<GatewayConfig, ConfigError>
    {
        let r = ConfigReader(environment: environment, baseDirectory: baseDirectory, modules: modules)
        let root: Node
        do {
            // No tag resolution: every value is read as a string by ConfigReader, and Yams'
            // default resolver compiles its rules with NSRegularExpression, which loads
            // ICU's tables into every process for nothing (about 3 MB of RSS).
            guard let node = try Yams.compose(yaml: yaml, .basic) else {
                return .failure(
                    ConfigError(problems: [ConfigProblem(path: "", line: nil, message: "the file is empty")]))
            }
            root = node
        } catch {
            return .failure(
                ConfigError(problems: [ConfigProblem(path: "", line: nil, message: "not valid YAML: \(error)")]))
        }
        var cfg = GatewayConfig()
        guard let top = r.mapping(root, path: "", section: .top) else {
            return .failure(ConfigError(problems: r.problems))
        }

        // Left out, or auto: one per core.
        cfg.workers = max(1, cores)
        GatewayConfig.keyTable.read(top, into: &cfg, path: "", r)
        // A module's section may name the issuers and clients; `login` and the routes may name
        // what a module defines (a login endpoint's rate limit, `issuers: [self]`).
        for point in [ModuleReadPoint.afterIssuers, .beforeRoutes] {
            modules.read(top, at: point, into: &cfg, r)
            GatewayConfig.keyTable.read(top, into: &cfg, path: "", r, at: point)
        }
        // What derives from several sections, the profiles' rewrites, the cross-checks.
        for step in afterSections(modules) { step.run(&cfg, top, r) }
        guard r.problems.isEmpty else { return .failure(ConfigError(problems: r.problems)) }
        cfg.finish()
        return .success(cfg)
    }

    /// Reads and parses a file; relative `*_file` paths resolve next to it.
    /// `environment` (for `${VAR}` references): nil reads the process's own.
    public static func load(path: String, environment: [String: String]? = nil) -> Result<GatewayConfig, ConfigError> {
        // The file's bytes are let go before parsing: the parse is the start's memory peak
        // (about 0.9 MB of bytes at 10,000 routes).
        guard let text = FileManager.default.contents(atPath: path).flatMap({ String(data: $0, encoding: .utf8) })
        else {
            return .failure(
                ConfigError(problems: [ConfigProblem(path: "", line: nil, message: "cannot read config file \(path)")]))
        }
        let dir = (path as NSString).deletingLastPathComponent
        return parse(
            yaml: text, environment: environment ?? ProcessInfo.processInfo.environment,
            baseDirectory: dir.isEmpty ? "." : dir)
    }
}
