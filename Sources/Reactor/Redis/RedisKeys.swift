/// Which arguments of a command are keys, for the commands the gateway sends: a Redis
/// Cluster client routes by them, and every deployment refuses keys in different slots, so
/// code that works against one server also works against a cluster. Other commands name
/// their keys explicitly (`Redis.send(_:keys:done:)`).
enum RedisKeys {
    /// The indexes of the key arguments, `[]` for a command without keys, nil for a command
    /// not listed here. A command too short to have its key gets `[]`: the server answers
    /// its arity error.
    static func indexes(of arguments: [[UInt8]]) throws(RedisError) -> [Int]? {
        guard let name = arguments.first else { return nil }
        let upper = String(decoding: name, as: UTF8.self).uppercased()
        if keyless.contains(upper) { return [] }
        if firstArgument.contains(upper) { return arguments.count >= 2 ? [1] : [] }
        if everyArgument.contains(upper) { return Array(1..<max(1, arguments.count)) }
        if scripts.contains(upper) { return try scriptKeys(arguments) }
        return nil
    }

    /// `EVAL script numkeys key… arg…`: the keys follow the count.
    private static func scriptKeys(_ arguments: [[UInt8]]) throws(RedisError) -> [Int] {
        guard arguments.count >= 3 else { return [] }
        let text = String(decoding: arguments[2], as: UTF8.self)
        guard let count = Int(text), count >= 0, 3 + count <= arguments.count else {
            throw RedisError(
                .protocolError, "numkeys \(text) does not fit the script's \(arguments.count - 3) arguments")
        }
        return Array(3..<(3 + count))
    }

    private static let keyless: Set<String> = ["PING", "ECHO"]
    private static let firstArgument: Set<String> = [
        "GET", "SET", "GETDEL", "INCR", "INCRBY", "DECR", "DECRBY", "EXPIRE", "PEXPIRE", "PERSIST", "TTL", "PTTL",
        "SADD", "SREM", "SMEMBERS", "SISMEMBER", "SCARD",
        "ZADD", "ZREM", "ZCARD", "ZRANGEBYSCORE", "ZREMRANGEBYSCORE"
    ]
    private static let everyArgument: Set<String> = ["DEL", "UNLINK", "EXISTS", "MGET"]
    private static let scripts: Set<String> = ["EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO"]
}
