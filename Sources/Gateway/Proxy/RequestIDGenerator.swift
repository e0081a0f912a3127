import Foundation

/// Request ids unique across workers and restarts without coordination: a random process
/// prefix, the worker number and a per-worker counter, in base32 digits (0-9, a-v) without
/// separators, e.g. `k3x9q2m` `0` `1f`. Up to 15 bytes (the first billion requests of a
/// worker) a Swift string holds them inline: an id costs no allocation. Loop-thread only.
final class RequestIDGenerator {
    private let prefix: [UInt8]
    private var counter: UInt64 = 0

    init(worker: Int, processPrefix: String) {
        prefix = Array(processPrefix.utf8) + Self.base32(UInt64(worker))
    }

    /// The prefix, then the counter: put together on the stack (a process prefix, a worker
    /// and a counter are at most 7 + 13 + 13 digits), then copied into the string.
    func next() -> String {
        counter &+= 1
        let n = counter
        let digits = Self.digits(n)
        guard prefix.count + digits <= 40 else { return String(decoding: prefix + Self.base32(n), as: UTF8.self) }
        var out = InlineArray<40, UInt8>(repeating: 0)
        var i = 0
        for b in prefix {
            out[i] = b
            i += 1
        }
        for d in stride(from: digits - 1, through: 0, by: -1) {
            out[i] = Self.digit(UInt8(truncatingIfNeeded: n >> UInt64(5 * d)) & 0x1F)
            i += 1
        }
        do {
            return String(copying: try UTF8Span(validating: out.span.extracting(0..<i)))
        } catch {
            preconditionFailure("base32 digits are ASCII")
        }
    }

    /// 7 random base32 digits (35 bits), once per process.
    static func makeProcessPrefix() -> String {
        var rng = SystemRandomNumberGenerator()
        let r: UInt64 = rng.next()
        return String(
            decoding: (0..<7).map { digit(UInt8(truncatingIfNeeded: r >> UInt64(5 * $0)) & 0x1F) }, as: UTF8.self)
    }

    private static func digits(_ n: UInt64) -> Int { max(1, (64 - n.leadingZeroBitCount + 4) / 5) }

    private static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    static func base32(_ n: UInt64) -> [UInt8] {
        (0..<digits(n)).reversed().map { digit(UInt8(truncatingIfNeeded: n >> UInt64(5 * $0)) & 0x1F) }
    }
}
