import Foundation

/// Request ids unique across workers and restarts without coordination: a random process
/// prefix, the worker number and a per-worker counter. Loop-thread only.
final class RequestIDGenerator {
    private let prefix: String
    private var counter: UInt64 = 0

    init(worker: Int, processPrefix: String) {
        prefix = "\(processPrefix)-\(worker)-"
    }

    func next() -> String {
        counter &+= 1
        return prefix + String(counter, radix: 16)
    }

    /// 8 random bytes as hex, once per process.
    static func makeProcessPrefix() -> String {
        var rng = SystemRandomNumberGenerator()
        return String(format: "%016llx", rng.next() as UInt64)
    }
}
