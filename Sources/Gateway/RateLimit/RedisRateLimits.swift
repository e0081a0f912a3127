import JOSE
import Reactor

/// The Redis store: every replica shares one budget per key. The takes of one loop turn go
/// as one atomic script call per hash slot (`EVALSHA`; `EVAL` again after `NOSCRIPT`, which
/// also loads the script on a node that lost it), timed by the Redis server's own clock
/// (`TIME`), so replicas' clocks need not agree. Each key is hash-tagged on its digest (a
/// Cluster routes it whole) and expires when its budget is whole again. One per worker, on
/// its loop; Redis' timeouts bound every call (`RedisClients`).
///
/// Why a turn's takes go together: a call costs Redis a command and a script run, and the
/// gateway a command to encode and a reply to parse, whatever it carries. Keys in one call
/// must share a hash slot (`Redis.send(_:keys:done:)`), so takes of different callers still
/// go as calls of their own, written together; the takes of one caller that came in one turn
/// share one call, and its key is read and written once.
final class RedisRateLimits: RateLimitStore {
    typealias Done = (Result<GCRA.Decision, RateLimitStoreError>) -> Void

    private struct Take {
        let key: String
        let cell: GCRA
        let done: Done
    }

    private let client: Redis
    private let loop: EventLoop
    private let prefix: [UInt8]
    /// The script's SHA-1 as Redis reports it (`SCRIPT LOAD`); until then, `EVAL`.
    private var sha: [UInt8]?
    private var loading = false
    /// This turn's takes by their key's hash slot, sent at the end of the turn.
    private var pending: [Int: [Take]] = [:]
    private var flushScheduled = false
    /// The script arguments of the cells seen (a policy has one, or one per override).
    private var cellArguments: [GCRA: (interval: [UInt8], tolerance: [UInt8])] = [:]
    /// Keys' Redis names and hash slots, by key (a caller comes again and again).
    private var names: [String: (name: [UInt8], slot: Int)] = [:]

    /// Takes in one call at most; more go in the next.
    static let maxTakesPerCall = 128
    /// The replies the script can give: counts and microsecond spans within ten years.
    static let plausible: ClosedRange<Int64> =
        -(NumericDate.longestLifetime * 1_000_000)...(NumericDate.longestLifetime
        * 1_000_000)

    init(client: Redis, loop: EventLoop, prefix: String) {
        self.client = client
        self.loop = loop
        self.prefix = Array(prefix.utf8)
    }

    /// KEYS: the distinct keys of the call. ARGV: per take, three numbers: the index of its
    /// key in KEYS, the emission interval and the tolerance (µs). Returns three integers per
    /// take, in order: `allowed`, then the remaining requests when allowed or the wait when
    /// refused (µs), then the time until the budget is whole (µs). Each key is read once and,
    /// if a take moved it, written once with its final TAT. Numbers are formatted with
    /// `%.0f`: Lua's own text for a 16-digit number is in exponent form.
    static let script = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local tats, moved, out = {}, {}, {}
        for i = 1, #ARGV, 3 do
          local k = tonumber(ARGV[i])
          local interval = tonumber(ARGV[i + 1])
          local tolerance = tonumber(ARGV[i + 2])
          local tat = tats[k]
          if tat == nil then tat = tonumber(redis.call('GET', KEYS[k])) or now end
          if tat < now then tat = now end
          local nxt = tat + interval
          if nxt - now > tolerance then
            tats[k] = tat
            out[#out + 1] = 0
            out[#out + 1] = nxt - now - tolerance
            out[#out + 1] = tat - now
          else
            tats[k] = nxt
            moved[k] = true
            out[#out + 1] = 1
            out[#out + 1] = math.floor((tolerance - (nxt - now)) / interval)
            out[#out + 1] = nxt - now
          end
        end
        for k in pairs(moved) do
          local ttl = math.ceil((tats[k] - now) / 1000)
          redis.call('SET', KEYS[k], string.format('%.0f', tats[k]), 'PX', string.format('%.0f', ttl))
        end
        return out
        """

    func take(_ key: String, _ cell: GCRA, done: @escaping Done) {
        if sha == nil { load() }
        pending[name(of: key).slot, default: []].append(Take(key: key, cell: cell, done: done))
        if !flushScheduled {
            flushScheduled = true
            // After the turn's other ready callbacks, in the same turn (`EventLoop.execute`).
            loop.execute { [self] in flush() }
        }
    }

    /// Sends the turn's takes: one call per hash slot (and per `maxTakesPerCall`).
    private func flush() {
        flushScheduled = false
        let groups = pending
        pending.removeAll(keepingCapacity: true)
        for (_, takes) in groups {
            var start = 0
            while start < takes.count {
                let end = min(start + Self.maxTakesPerCall, takes.count)
                call(takes[start..<end])
                start = end
            }
        }
    }

    private func call(_ takes: ArraySlice<Take>) {
        var keys: [[UInt8]] = []
        var indexes: [String: Int] = [:]
        var argv: [[UInt8]] = []
        argv.reserveCapacity(takes.count * 3)
        for take in takes {
            let index: Int
            if let known = indexes[take.key] {
                index = known
            } else {
                index = keys.count
                indexes[take.key] = index
                keys.append(name(of: take.key).name)
            }
            let cell = arguments(of: take.cell)
            argv.append(Self.numerals[index + 1])
            argv.append(cell.interval)
            argv.append(cell.tolerance)
        }
        var tail: [[UInt8]] = [Self.numerals[keys.count]]
        tail.reserveCapacity(1 + keys.count + argv.count)
        tail.append(contentsOf: keys)
        tail.append(contentsOf: argv)
        let keyIndexes = Array(3..<(3 + keys.count))
        let dones = takes.map(\.done)
        if let sha {
            client.send([Self.evalsha, sha] + tail, keys: keyIndexes) { [self] result in
                if case .success(.error(let e)) = result, e.hasPrefix("NOSCRIPT") {
                    client.send([Self.eval, Self.scriptBytes] + tail, keys: keyIndexes) { Self.answer(dones, $0) }
                } else {
                    Self.answer(dones, result)
                }
            }
        } else {
            client.send([Self.eval, Self.scriptBytes] + tail, keys: keyIndexes) { Self.answer(dones, $0) }
        }
    }

    /// `key`'s name in Redis (`PREFIX rl:{key}`, hash-tagged on the key) and its slot.
    private func name(of key: String) -> (name: [UInt8], slot: Int) {
        if let known = names[key] { return known }
        var name = prefix
        name.append(contentsOf: "rl:{".utf8)
        name.append(contentsOf: key.utf8)
        name.append(UInt8(ascii: "}"))
        let made = (name, Redis.slot(ofKey: name))
        if names.count >= RateLimiter.memoCapacity { names.removeAll(keepingCapacity: true) }
        names[key] = made
        return made
    }

    private func arguments(of cell: GCRA) -> (interval: [UInt8], tolerance: [UInt8]) {
        if let known = cellArguments[cell] { return known }
        let made = (Array(String(cell.interval).utf8), Array(String(cell.tolerance).utf8))
        cellArguments[cell] = made
        return made
    }

    private func load() {
        guard !loading else { return }
        loading = true
        client.send(["SCRIPT", "LOAD", Self.script], keys: []) { [self] result in
            loading = false
            if case .success(.bulk(let bytes)) = result { sha = bytes }
        }
    }

    /// "0" to `maxTakesPerCall`: key counts and indexes.
    private static let numerals = (0...maxTakesPerCall).map { Array(String($0).utf8) }
    private static let evalsha = Array("EVALSHA".utf8)
    private static let eval = Array("EVAL".utf8)
    private static let scriptBytes = Array(script.utf8)

    /// Each take's decision from the call's reply, or the failure for all of them.
    private static func answer(_ dones: [Done], _ result: Result<RedisReply, RedisError>) {
        let decisions = decisions(result, count: dones.count)
        for (i, done) in dones.enumerated() {
            switch decisions {
            case .success(let all): done(.success(all[i]))
            case .failure(let error): done(.failure(error))
            }
        }
    }

    static func decisions(
        _ result: Result<RedisReply, RedisError>, count: Int
    ) -> Result<[GCRA.Decision], RateLimitStoreError> {
        switch result {
        case .success(.array(let items)) where items.count == 3 * count:
            var out: [GCRA.Decision] = []
            out.reserveCapacity(count)
            for i in stride(from: 0, to: items.count, by: 3) {
                // Microseconds the script computed: a reply outside 0…10 years is no answer of
                // the script's (the gateway adds to them; a value near Int64's ends would trap).
                guard case .integer(let allowed) = items[i], case .integer(let second) = items[i + 1],
                    case .integer(let reset) = items[i + 2], Self.plausible.contains(second),
                    Self.plausible.contains(reset)
                else { return .failure(unexpected(result)) }
                out.append(
                    allowed == 1
                        ? GCRA.Decision(allowed: true, remaining: Int(second), retryAfter: 0, reset: reset)
                        : GCRA.Decision(allowed: false, remaining: 0, retryAfter: second, reset: reset))
            }
            return .success(out)
        case .success: return .failure(unexpected(result))
        case .failure(let e): return .failure(RateLimitStoreError(message: "\(e)"))
        }
    }

    private static func unexpected(_ result: Result<RedisReply, RedisError>) -> RateLimitStoreError {
        RateLimitStoreError(message: "Redis answered the rate-limit script with \(result)")
    }
}
