import JOSE
import OAuth
import Reactor
import Yams

/// `store:`, `public_url:`, `dpop:` and a route's `dpop:` (RFC 9449).
extension ConfigParser {
    static func store(_ node: Node, _ r: ConfigReader) -> StoreConfig {
        var url: String?
        var prefix = "tokengate:"
        if case .scalar = node {
            url = r.string(node, path: "store")
        } else if let m = r.mapping(node, path: "store", section: .store) {
            url = m["url"].flatMap { r.string($0, path: "store.url") }
            if url == nil && m["url"] == nil { r.problem("store", node, "needs url: memory or redis://host:6379/0") }
            if let n = m["prefix"], let s = r.string(n, path: "store.prefix") {
                // No braces: the keys' own hash tags keep one session's keys in one cluster slot.
                if s.utf8.count > 64
                    || s.utf8.contains(where: {
                        $0 <= 0x20 || $0 >= 0x7f || $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}")
                    })
                {
                    r.problem("store.prefix", n, "must be up to 64 printable characters without spaces or braces")
                } else {
                    prefix = s
                }
            }
        }
        guard let url else { return .memory }
        if url == "memory" { return .memory }
        guard RedisDeployment(url: url) != nil else {
            r.problem(
                "store", node,
                "must be memory, redis[s]://[[user]:password@]host[:port][/db][?ca_file=…&server_name=…], "
                    + "redis+sentinel://[[user]:password@]host:port[,host:port…]/MASTER[/db] or redis+cluster://host:port[,host:port…]"
            )
            return .memory
        }
        return .redis(url: url, prefix: prefix)
    }

    static func publicURLs(_ node: Node, _ r: ConfigReader) -> [PublicURL] {
        if case .sequence = node, let seq = r.sequence(node, path: "public_url") {
            return seq.enumerated().compactMap { publicURL($1, path: "public_url[\($0)]", r) }
        }
        return publicURL(node, path: "public_url", r).map { [$0] } ?? []
    }

    static func publicURL(_ node: Node, path: String, _ r: ConfigReader) -> PublicURL? {
        guard let s = r.string(node, path: path) else { return nil }
        guard let u = ConfigValues.url(s), u.path.isEmpty else {
            r.problem(path, node, "\"\(s)\" must be an origin such as https://api.example.com (no path, query or user)")
            return nil
        }
        let bracketed = u.host.contains(":") ? "[\(u.host)]" : u.host
        let defaultPort: UInt16 = u.scheme == "https" ? 443 : 80
        return PublicURL(scheme: u.scheme, authority: u.port == defaultPort ? bracketed : "\(bracketed):\(u.port)")
    }

    static func dpopSettings(_ node: Node, _ r: ConfigReader) -> DPoPSettings {
        var d = DPoPSettings()
        guard let m = r.mapping(node, path: "dpop", section: .dpop) else { return d }
        if let n = m["on_store_failure"], let s = r.string(n, path: "dpop.on_store_failure") {
            switch s {
            case "fail_closed": d.failOpenOnStoreFailure = false
            case "fail_open": d.failOpenOnStoreFailure = true
            default: r.problem("dpop.on_store_failure", n, "must be fail_closed or fail_open")
            }
        }
        var keys: [(String, Node)] = []
        if m["nonce_keys"] != nil && m["nonce_keys_file"] != nil {
            r.problem("dpop.nonce_keys", m["nonce_keys"], "give either nonce_keys or nonce_keys_file, not both")
        } else if let n = m["nonce_keys"], let seq = r.sequence(n, path: "dpop.nonce_keys") {
            keys = seq.enumerated().compactMap { j, k in r.string(k, path: "dpop.nonce_keys[\(j)]").map { ($0, k) } }
        } else if let n = m["nonce_keys_file"], let text = r.secret(m, key: "nonce_keys", path: "dpop") {
            keys = text.split(separator: "\n").map { (String($0), n) }
        }
        for (j, (key, n)) in keys.enumerated() {
            // RFC 2104 §3 / RFC 7518 §3.2: an HMAC-SHA-256 key at least as long as its output.
            if key.utf8.count < 32 {
                r.problem("dpop.nonce_keys[\(j)]", n, "must be at least 32 bytes (e.g. openssl rand -base64 32)")
            } else {
                d.nonceKeys.append(Array(key.utf8))
            }
        }
        if let n = m["nonce_lifetime"], let v = r.duration(n, path: "dpop.nonce_lifetime") {
            if v < 10 || v > 3600 {
                r.problem("dpop.nonce_lifetime", n, "must be from 10s to 1h")
            } else {
                d.nonceLifetime = v
            }
        }
        if let n = m["key_file"], let file = r.string(n, path: "dpop.key_file") {
            let (key, alg) = clientKey(file: file, node: n, algNode: m["alg"], path: "dpop", r)
            if let key, let alg {
                if let signer = try? DPoPProofSigner(key: key, alg: alg) {
                    d.proofSigner = signer
                } else {
                    r.problem("dpop.key_file", n, "cannot sign DPoP proofs with \(alg.rawValue) (RFC 9449 §4.2)")
                }
            }
        } else if let n = m["alg"] {
            r.problem("dpop.alg", n, "needs key_file (the algorithm of the gateway's DPoP key)")
        }
        if let n = m["replay_cache_entries"], let s = r.string(n, path: "dpop.replay_cache_entries") {
            if let v = Int(s), v >= 1000, v <= 100_000_000 {
                d.replayCacheEntries = v
            } else {
                r.problem("dpop.replay_cache_entries", n, "must be a number from 1000 to 100000000")
            }
        }
        return d
    }

    static func dpopRoute(_ node: Node, path p: String, _ r: ConfigReader) -> DPoPRouteConfig {
        var d = DPoPRouteConfig()
        guard let m = r.mapping(node, path: p, section: .routeDPoP) else { return d }
        if let n = m["algorithms"], let seq = r.sequence(n, path: "\(p).algorithms") {
            var algs = Set<JWSAlgorithm>()
            for (j, a) in seq.enumerated() {
                guard let s = r.string(a, path: "\(p).algorithms[\(j)]") else { continue }
                guard let alg = JWSAlgorithm(rawValue: s) else {
                    r.problem(
                        "\(p).algorithms[\(j)]", a,
                        "\"\(s)\" is not one of \(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))")
                    continue
                }
                // RFC 9449 §4.3 check 5: a proof is signed with an asymmetric key.
                if alg.isSymmetric {
                    r.problem(
                        "\(p).algorithms[\(j)]", a, "DPoP proofs are signed with asymmetric keys; \(s) is not allowed")
                } else {
                    algs.insert(alg)
                }
            }
            if !algs.isEmpty { d.algorithms = algs }
        }
        if let n = m["iat_window"], let v = r.duration(n, path: "\(p).iat_window") {
            if v < 1 || v > 86_400 {
                r.problem("\(p).iat_window", n, "must be from 1s to 24h")
            } else {
                d.iatWindow = v
            }
        }
        if let n = m["leeway"], let v = r.duration(n, path: "\(p).leeway") {
            if v > 300 {
                r.problem("\(p).leeway", n, "more than 5m of clock skew is not accepted")
            } else {
                d.leeway = v
            }
        }
        if let n = m["nonce"], let s = r.string(n, path: "\(p).nonce") {
            switch s {
            case "required": d.nonceRequired = true
            case "off": d.nonceRequired = false
            default: r.problem("\(p).nonce", n, "must be required or off")
            }
        }
        if let n = m["forward_proof"], let b = r.bool(n, path: "\(p).forward_proof") { d.forwardProof = b }
        if let n = m["jkt_header"], let s = r.string(n, path: "\(p).jkt_header") {
            if s == "off" {
                d.jktHeader = nil
            } else if s.isEmpty || !s.utf8.allSatisfy(HeaderRules.isTokenChar)
                || !HeaderRules.forwardsRequestHeader(s, listed: [], reservedPrefix: nil)
                || ["authorization", "cookie", "dpop"].contains(s.lowercased())
            {
                r.problem("\(p).jkt_header", n, "must be a header name the gateway may set (or off)")
            } else {
                d.jktHeader = s
            }
        }
        return d
    }
}
