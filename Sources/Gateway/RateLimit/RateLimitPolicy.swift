/// A named rate limit (`rate_limits.NAME`): whose requests it counts (`key`), how many may
/// come (`rate`, `burst`), exceptions by the key's value (`overrides`), and what happens
/// when its store cannot answer. Routes list policies by name (`rate_limit`); every listed
/// policy must allow a request.
struct RateLimitPolicy: Sendable, Equatable {
    let name: String
    var key: RateLimitKey = .subject
    let limit: RateLimitRule
    /// The name as a Structured Field item (`"per-user"`), and `RateLimit-Policy` for
    /// `limit`: serialized once, when the policy is made, not per answer.
    let nameItem: String
    let limitField: String
    /// Limits for particular values of the key (a batch client's `sub`), by that value.
    var overrides: [String: RateLimitRule] = [:]
    var onStoreFailure = RateLimitStoreFailure.failOpen
    /// `RateLimit-Policy` and `RateLimit` on answers (draft-ietf-httpapi-ratelimit-headers).
    var headers = true

    init(name: String, limit: RateLimitRule) {
        self.name = name
        self.limit = limit
        nameItem = RateLimitFields.list(name, [])
        limitField = RateLimitFields.list(name, [("q", limit.rate.count), ("w", limit.rate.seconds)])
    }

    /// The limit for a request whose key has `value`.
    func rule(for value: String) -> RateLimitRule { overrides[value] ?? limit }
}

/// What a policy counts requests by. Identity keys count once the request is admitted, so a
/// forged token spends nobody's budget; `ip` and `header` count before authentication, so a
/// flood of bad tokens is cut before any signature check.
enum RateLimitKey: Sendable, Equatable {
    /// The token's or the session's `sub`.
    case subject
    /// The token's `client_id` (RFC 9068 §2.2), else its `azp`.
    case clientID
    /// The DPoP key's thumbprint the token is bound to (RFC 9449 §6).
    case jkt
    /// The SHA-256 thumbprint of the client's TLS certificate (RFC 8705 §3.1).
    case certificate
    /// The client's address, as `trusted_proxies` lets the gateway know it.
    case ip
    /// A claim of the token or the session, by its path (`claim:org.id`).
    case claim([String])
    /// A request header the client sends (`header:X-Tenant`).
    case header(String)
    /// The MCP tool a `tools/call` names, with the caller's `sub`.
    case tool

    /// Where in the chain it counts.
    var position: StagePosition {
        switch self {
        case .ip, .header: .beforeAuthentication
        case .subject, .clientID, .jkt, .certificate, .claim: .afterAuthentication
        case .tool: .beforeUpstream
        }
    }

    /// As the config writes it.
    var text: String {
        switch self {
        case .subject: "sub"
        case .clientID: "client_id"
        case .jkt: "jkt"
        case .certificate: "cert"
        case .ip: "ip"
        case .claim(let path): "claim:" + path.joined(separator: ".")
        case .header(let name): "header:" + name
        case .tool: "tool"
        }
    }

    /// `sub | client_id | jkt | cert | ip | claim:PATH | header:NAME | tool`; nil otherwise.
    init?(_ text: String) {
        switch text {
        case "sub": self = .subject
        case "client_id": self = .clientID
        case "jkt": self = .jkt
        case "cert": self = .certificate
        case "ip": self = .ip
        case "tool": self = .tool
        default:
            if text.hasPrefix("claim:") {
                let path = text.dropFirst(6).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                guard !path.isEmpty, !path.contains(where: \.isEmpty) else { return nil }
                self = .claim(path)
            } else if text.hasPrefix("header:") {
                let name = String(text.dropFirst(7))
                guard !name.isEmpty, name.utf8.allSatisfy(HeaderRules.isTokenChar) else { return nil }
                self = .header(name)
            } else {
                return nil
            }
        }
    }
}

/// `N/s`, `N/m`, `N/h` or `N/d`: N requests per unit, evenly spaced.
struct RateLimitRate: Sendable, Equatable {
    var count: Int
    var seconds: Int

    init(count: Int, seconds: Int) {
        self.count = count
        self.seconds = seconds
    }

    init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let n = Int(parts[0]), n >= 1, n <= 1_000_000_000 else { return nil }
        switch parts[1] {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86400
        default: return nil
        }
        count = n
    }

    var text: String {
        let unit = [1: "s", 60: "m", 3600: "h", 86400: "d"][seconds] ?? "\(seconds)s"
        return "\(count)/\(unit)"
    }
}

/// A rate and how many requests may come at once.
struct RateLimitRule: Sendable, Equatable {
    var rate: RateLimitRate
    var burst: Int

    /// The algorithm's parameters for this rule.
    var cell: GCRA { GCRA(rate: rate, burst: burst) }

    /// `burst`'s default: the per-second rate, at least 1.
    static func defaultBurst(_ rate: RateLimitRate) -> Int { max(1, rate.count / rate.seconds) }
}

/// What a policy does when its store cannot answer.
enum RateLimitStoreFailure: String, Sendable, Equatable {
    /// The request goes on, unlimited and with no rate-limit fields.
    case failOpen = "fail_open"
    /// 503 with Retry-After.
    case failClosed = "fail_closed"
}
