import Synchronization

@testable import Gateway

/// A wall clock that moves only when a test says so: timeouts are tested by moving time, not
/// by sleeping. Starts at a fixed, realistic Unix time.
final class ManualClock: WallClock {
    private let time: Mutex<Double>

    init(_ start: Double = 1_750_000_000) { time = Mutex(start) }

    var now: Double { time.withLock { $0 } }

    /// Moves time forward by `seconds`.
    func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
}
