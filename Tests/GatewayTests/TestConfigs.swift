import Foundation
import Logging

@testable import Gateway

/// One worker over the in-memory transport, from a config text (no sockets, memory stores).
/// `wallClock`: a `ManualClock` for tests that move time.
func testWorker(_ yaml: String, wallClock: any WallClock = SystemClock(), loginShared: LoginShared = LoginShared())
    throws -> Worker
{
    let config = try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get()
    return Worker(
        id: 0, config: config, log: Logger(label: "test"), processPrefix: "t",
        stores: StoreBackend(.memory, replayCapacity: 100, loginShared: loginShared), wallClock: wallClock)
}

/// Config tests that read a session key from `${SK}` and key files under /etc/tg.
protocol ConfigParsing {}

extension ConfigParsing {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(
            yaml: yaml, environment: ["SK": "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="], baseDirectory: "/etc/tg",
            cores: 2)
    }

    /// Every problem the parser finds, as check-config prints them; "" when the config is valid.
    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }
}
