import Foundation

/// Request ids unique across workers and restarts without coordination: a random process
/// prefix, the worker number and a per-worker counter. Loop-thread only.
final class RequestIDGenerator {
    private let prefix: [UInt8]
    private var counter: UInt64 = 0

    init(worker: Int, processPrefix: String) {
        prefix = Array("\(processPrefix)-\(worker)-".utf8)
    }

    /// The prefix, then the counter in lowercase hex: written into the string's own memory
    /// (one allocation; concatenating and formatting took three).
    func next() -> String {
        counter &+= 1
        let n = counter
        let digits = max(1, (64 - n.leadingZeroBitCount + 3) / 4)
        return String(unsafeUninitializedCapacity: prefix.count + digits) { out in
            var i = 0
            for b in prefix {
                out[i] = b
                i += 1
            }
            for d in stride(from: digits - 1, through: 0, by: -1) {
                let nibble = UInt8(truncatingIfNeeded: n >> UInt64(4 * d)) & 0xF
                out[i] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
                i += 1
            }
            return i
        }
    }

    /// 8 random bytes as hex, once per process.
    static func makeProcessPrefix() -> String {
        var rng = SystemRandomNumberGenerator()
        return String(format: "%016llx", rng.next() as UInt64)
    }
}
