internal import CHiredis

/// Turns a command's arguments into RESP with hiredis' formatter (binary-safe: every
/// argument goes with its length), and refuses the commands a shared, pipelined connection
/// cannot carry.
enum RedisCommand {
    /// Checks a caller's command: not empty, not one `refusal(for:_:)` names.
    static func validate(_ arguments: [[UInt8]]) throws(RedisError) {
        guard let name = arguments.first else {
            // hiredis would format `*0\r\n`, which Redis silently ignores: no reply would
            // come, and every later reply would be matched to the wrong command.
            throw RedisError(.protocolError, "a command needs at least one argument")
        }
        if let why = refusal(for: name, arguments.dropFirst().first) {
            throw RedisError(.protocolError, why)
        }
    }

    /// The RESP bytes of one command (`*N\r\n$len\r\narg\r\n…`); `arguments` is not empty.
    static func encode(_ arguments: [[UInt8]]) throws(RedisError) -> [UInt8] {
        // One contiguous buffer holds every argument so that argv can point into it; the
        // trailing zero keeps the base address non-nil when all arguments are empty.
        var offsets: [Int] = []
        var lengths: [Int] = []
        var flat: [UInt8] = []
        flat.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
        for arg in arguments {
            offsets.append(flat.count)
            lengths.append(arg.count)
            flat.append(contentsOf: arg)
        }
        flat.append(0)
        var target: UnsafeMutablePointer<CChar>?
        let length = flat.withUnsafeBufferPointer { buf -> Int32 in
            let base = UnsafeRawPointer(buf.baseAddress!).assumingMemoryBound(to: CChar.self)
            var argv: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return redisFormatCommandArgv(&target, Int32(arguments.count), &argv, lengths)
        }
        guard length >= 0, let target else {
            throw RedisError(.protocolError, "redisFormatCommandArgv failed (out of memory)")
        }
        defer { redisFreeCommand(target) }
        return Array(UnsafeRawBufferPointer(start: target, count: Int(length)))
    }

    /// Why a command cannot be sent, or nil. Replies are matched to commands first in, first
    /// out, one each; these would break that (a subscription or MONITOR streams replies
    /// nobody asked for, `CLIENT REPLY OFF|SKIP` suppresses them, `HELLO 3` switches to a
    /// protocol hiredis 0.14 cannot read) or would change the login or database of a
    /// connection the endpoint sets up (`AUTH`, `SELECT`, `RESET`), which a reconnect undoes.
    static func refusal(for name: [UInt8], _ subcommand: [UInt8]?) -> String? {
        let upper = String(decoding: name, as: UTF8.self).uppercased()
        if refused.contains(upper) {
            return "\(upper) cannot be sent on a shared pipelined connection"
        }
        if upper == "CLIENT", let sub = subcommand, String(decoding: sub, as: UTF8.self).uppercased() == "REPLY" {
            return "CLIENT REPLY cannot be sent on a shared pipelined connection"
        }
        return nil
    }

    private static let refused: Set<String> = [
        "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
        "MONITOR", "SYNC", "PSYNC", "HELLO", "RESET", "AUTH", "SELECT"
    ]
}
