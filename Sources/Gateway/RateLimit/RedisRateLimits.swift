import Reactor

/// The Redis store: every replica shares one budget per key. One atomic script call per
/// request (`EVALSHA`; `EVAL` again after `NOSCRIPT`, which also loads the script on a node
/// that lost it), timed by the Redis server's own clock (`TIME`), so replicas' clocks need
/// not agree. The key is hash-tagged on its digest (a Cluster routes it whole) and expires
/// when its budget is whole again. One per worker, on its loop; Redis' timeouts bound
/// every call (`RedisClients`).
final class RedisRateLimits: RateLimitStore {
    private let client: Redis
    private let prefix: String
    /// The script's SHA-1 as Redis reports it (`SCRIPT LOAD`); until then, `EVAL`.
    private var sha: String?
    private var loading = false

    init(client: Redis, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    /// ARGV: the emission interval and the tolerance, in microseconds. Returns
    /// `{allowed, remaining or wait, reset}`: remaining requests when allowed, the wait when
    /// refused (µs), and the time until the budget is whole (µs). Numbers are formatted
    /// with `%.0f`: Lua's own text for a 16-digit number is in exponent form.
    static let script = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local interval = tonumber(ARGV[1])
        local tolerance = tonumber(ARGV[2])
        local tat = tonumber(redis.call('GET', KEYS[1])) or now
        if tat < now then tat = now end
        local nxt = tat + interval
        if nxt - now > tolerance then
          return {0, nxt - now - tolerance, tat - now}
        end
        local ttl = math.ceil((nxt - now) / 1000)
        redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', string.format('%.0f', ttl))
        return {1, math.floor((tolerance - (nxt - now)) / interval), nxt - now}
        """

    func take(_ key: String, _ cell: GCRA, done: @escaping (Result<GCRA.Decision, RateLimitStoreError>) -> Void) {
        if sha == nil { load() }
        let name = "\(prefix)rl:{\(key)}"
        let args = [String(cell.interval), String(cell.tolerance)]
        if let sha {
            client.send(["EVALSHA", sha, "1", name] + args) { [self] result in
                if case .success(.error(let e)) = result, e.hasPrefix("NOSCRIPT") {
                    eval(name, args, done)
                } else {
                    done(Self.decision(result))
                }
            }
        } else {
            eval(name, args, done)
        }
    }

    private func eval(
        _ name: String, _ args: [String], _ done: @escaping (Result<GCRA.Decision, RateLimitStoreError>) -> Void
    ) {
        client.send(["EVAL", Self.script, "1", name] + args) { done(Self.decision($0)) }
    }

    private func load() {
        guard !loading else { return }
        loading = true
        client.send(["SCRIPT", "LOAD", Self.script], keys: []) { [self] result in
            loading = false
            if case .success(.bulk(let bytes)) = result { sha = String(decoding: bytes, as: UTF8.self) }
        }
    }

    static func decision(_ result: Result<RedisReply, RedisError>) -> Result<GCRA.Decision, RateLimitStoreError> {
        switch result {
        case .success(.array(let items)):
            guard items.count == 3, case .integer(let allowed) = items[0], case .integer(let second) = items[1],
                case .integer(let reset) = items[2]
            else { break }
            return .success(
                allowed == 1
                    ? GCRA.Decision(allowed: true, remaining: Int(second), retryAfter: 0, reset: reset)
                    : GCRA.Decision(allowed: false, remaining: 0, retryAfter: second, reset: reset))
        case .success: break
        case .failure(let e): return .failure(RateLimitStoreError(message: "\(e)"))
        }
        return .failure(RateLimitStoreError(message: "Redis answered the rate-limit script with \(result)"))
    }
}
