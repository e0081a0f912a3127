import Foundation
import Reactor

/// Where the authorization server keeps what outlives one request: authorization codes,
/// refresh-token families and consents. The memory store is this process's (shared by its
/// workers); the Redis store is every replica's. Keys are keyed digests of the secret or the
/// user they name (`AuthorizationGrantKeys`), never the raw values; values are sealed with
/// `session.keys` before they are written. Every `done` runs once, on the caller's loop.
protocol AuthorizationGrantStore: AnyObject {
    func put(_ key: String, _ value: String, ttl: Int64, done: @escaping (Result<Void, GrantStoreError>) -> Void)
    /// Stores `value` only where nothing is: false when something (a tombstone) is there.
    func create(_ key: String, _ value: String, ttl: Int64, done: @escaping (Result<Bool, GrantStoreError>) -> Void)
    func get(_ key: String, done: @escaping (Result<String?, GrantStoreError>) -> Void)
    /// Takes a single-use value: its first taker gets `.first`; the value then stays, marked
    /// taken, for `keepFor` seconds, so a second taker gets `.again` with it (RFC 6749
    /// §4.1.2: a code used twice ends what the first use was given).
    func redeem(_ key: String, keepFor: Int64, done: @escaping (Result<Redemption, GrantStoreError>) -> Void)
    /// Replaces the value with `new` only if it is still `expected`: false when another
    /// request changed it first (two refreshes racing with one token).
    func swap(
        _ key: String, expected: String, with new: String, ttl: Int64,
        done: @escaping (Result<Bool, GrantStoreError>) -> Void)
    func delete(_ key: String, done: @escaping (Result<Void, GrantStoreError>) -> Void)
}

enum Redemption: Equatable {
    case first(String)
    case again(String)
    case none
}

struct GrantStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The memory store: one table per kind of record (codes, families, consents: the part of
/// the key before its last `:`) for the process, each bounded; an expired entry is gone for
/// every reader at once, and a full table of live entries refuses new ones rather than
/// dropping one that still stands (a dropped code record would let the code be redeemed
/// twice). A flood of one kind cannot crowd out another.
///
/// `@unchecked Sendable`: the tables change only under `lock`.
final class MemoryAuthorizationGrants: AuthorizationGrantStore, @unchecked Sendable {
    private let lock = NSLock()
    private var tables: [Substring: Table] = [:]
    private let capacity: Int
    private let now: @Sendable () -> Double

    private struct Table {
        var entries: [String: (value: String, until: Double)] = [:]
        /// A full table is swept of expired entries at most once a second.
        var sweptAt = -Double.infinity
    }

    /// `capacity`: entries per kind; registered clients (`as:client`, anyone may make them)
    /// a tenth of that.
    init(capacity: Int = 100_000, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.capacity = capacity
        self.now = now
    }

    private func capacity(of kind: Substring) -> Int { kind == "as:client" ? max(1, capacity / 10) : capacity }

    private static func kind(_ key: String) -> Substring { key[..<(key.lastIndex(of: ":") ?? key.endIndex)] }

    private func live(_ key: String, at t: Double) -> String? {
        let kind = Self.kind(key)
        guard let e = tables[kind]?.entries[key] else { return nil }
        if e.until <= t {
            tables[kind]?.entries[key] = nil
            return nil
        }
        return e.value
    }

    /// Stores under `lock`; false when the key's table is full of live entries.
    private func store(_ key: String, _ value: String, ttl: Int64, at t: Double) -> Bool {
        let kind = Self.kind(key)
        var table = tables[kind] ?? Table()
        let capacity = capacity(of: kind)
        if table.entries[key] == nil, table.entries.count >= capacity {
            guard t - table.sweptAt >= 1 else { return false }
            table.sweptAt = t
            table.entries = table.entries.filter { $0.value.until > t }
            if table.entries.count >= capacity {
                tables[kind] = table
                return false
            }
        }
        table.entries[key] = (value, t + Double(ttl))
        tables[kind] = table
        return true
    }

    private func remove(_ key: String) { tables[Self.kind(key)]?.entries[key] = nil }

    func put(_ key: String, _ value: String, ttl: Int64, done: @escaping (Result<Void, GrantStoreError>) -> Void) {
        let ok = lock.withLock { store(key, value, ttl: ttl, at: now()) }
        done(ok ? .success(()) : .failure(GrantStoreError("the memory store is full")))
    }

    func create(_ key: String, _ value: String, ttl: Int64, done: @escaping (Result<Bool, GrantStoreError>) -> Void) {
        let result: Bool? = lock.withLock {
            let t = now()
            guard live(key, at: t) == nil else { return false }
            return store(key, value, ttl: ttl, at: t) ? true : nil
        }
        done(result.map { .success($0) } ?? .failure(GrantStoreError("the memory store is full")))
    }

    func get(_ key: String, done: @escaping (Result<String?, GrantStoreError>) -> Void) {
        done(.success(lock.withLock { live(key, at: now()) }))
    }

    func redeem(_ key: String, keepFor: Int64, done: @escaping (Result<Redemption, GrantStoreError>) -> Void) {
        let r: Redemption = lock.withLock {
            let t = now()
            guard let v = live(key, at: t) else { return .none }
            if v.hasPrefix(Self.taken) { return .again(String(v.dropFirst())) }
            tables[Self.kind(key)]?.entries[key] = (Self.taken + v, t + Double(keepFor))
            return .first(v)
        }
        done(.success(r))
    }

    func swap(
        _ key: String, expected: String, with new: String, ttl: Int64,
        done: @escaping (Result<Bool, GrantStoreError>) -> Void
    ) {
        let swapped = lock.withLock {
            let t = now()
            guard live(key, at: t) == expected else { return false }
            tables[Self.kind(key)]?.entries[key] = (new, t + Double(ttl))
            return true
        }
        done(.success(swapped))
    }

    func delete(_ key: String, done: @escaping (Result<Void, GrantStoreError>) -> Void) {
        lock.withLock { remove(key) }
        done(.success(()))
    }

    /// Marks a value taken; sealed values are base64url text, which never holds it.
    static let taken = "!"
}

/// The Redis store: each operation one command or one script run, atomic, so two replicas
/// redeeming one code, or rotating one refresh token, cannot both win. Run Redis with
/// `maxmemory-policy noeviction`, as for the replay store.
final class RedisAuthorizationGrants: AuthorizationGrantStore {
    private let client: Redis
    private let prefix: String

    init(client: Redis, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    static let redeemScript = """
        local v = redis.call('GET', KEYS[1])
        if not v then return false end
        if string.sub(v, 1, 1) == '!' then return v end
        redis.call('SET', KEYS[1], '!' .. v, 'EX', ARGV[1])
        return v
        """

    static let swapScript = """
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
        return 1
        """

    private func failed(_ reply: RedisReply) -> GrantStoreError {
        if case .error(let e) = reply { return GrantStoreError("the store answered \(e.prefix(120))") }
        return GrantStoreError("the store's answer is not the expected one")
    }

    func put(_ key: String, _ value: String, ttl: Int64, done: @escaping (Result<Void, GrantStoreError>) -> Void) {
        client.send(["SET", prefix + key, value, "EX", String(max(1, ttl))]) { [self] result in
            switch result {
            case .success(.status("OK")): done(.success(()))
            case .success(let other): done(.failure(failed(other)))
            case .failure(let e): done(.failure(GrantStoreError(e.description)))
            }
        }
    }

    func create(_ key: String, _ value: String, ttl: Int64, done: @escaping (Result<Bool, GrantStoreError>) -> Void) {
        client.send(["SET", prefix + key, value, "NX", "EX", String(max(1, ttl))]) { [self] result in
            switch result {
            case .success(.status("OK")): done(.success(true))
            case .success(.null): done(.success(false))
            case .success(let other): done(.failure(failed(other)))
            case .failure(let e): done(.failure(GrantStoreError(e.description)))
            }
        }
    }

    func get(_ key: String, done: @escaping (Result<String?, GrantStoreError>) -> Void) {
        client.send(["GET", prefix + key]) { [self] result in
            switch result {
            case .success(.bulk(let v)): done(.success(String(decoding: v, as: UTF8.self)))
            case .success(.null): done(.success(nil))
            case .success(let other): done(.failure(failed(other)))
            case .failure(let e): done(.failure(GrantStoreError(e.description)))
            }
        }
    }

    func redeem(_ key: String, keepFor: Int64, done: @escaping (Result<Redemption, GrantStoreError>) -> Void) {
        client.send(["EVAL", Self.redeemScript, "1", prefix + key, String(max(1, keepFor))]) { [self] result in
            switch result {
            case .success(.bulk(let bytes)):
                let v = String(decoding: bytes, as: UTF8.self)
                done(.success(v.hasPrefix("!") ? .again(String(v.dropFirst())) : .first(v)))
            case .success(.null): done(.success(.none))
            case .success(let other): done(.failure(failed(other)))
            case .failure(let e): done(.failure(GrantStoreError(e.description)))
            }
        }
    }

    func swap(
        _ key: String, expected: String, with new: String, ttl: Int64,
        done: @escaping (Result<Bool, GrantStoreError>) -> Void
    ) {
        client.send(["EVAL", Self.swapScript, "1", prefix + key, expected, new, String(max(1, ttl))]) {
            [self] result in
            switch result {
            case .success(.integer(let n)): done(.success(n == 1))
            case .success(let other): done(.failure(failed(other)))
            case .failure(let e): done(.failure(GrantStoreError(e.description)))
            }
        }
    }

    func delete(_ key: String, done: @escaping (Result<Void, GrantStoreError>) -> Void) {
        client.send(["DEL", prefix + key]) { [self] result in
            switch result {
            case .success(.integer): done(.success(()))
            case .success(let other): done(.failure(failed(other)))
            case .failure(let e): done(.failure(GrantStoreError(e.description)))
            }
        }
    }
}
