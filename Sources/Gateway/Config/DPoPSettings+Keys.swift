import JOSE
import OAuth
import Reactor
import Yams

extension DPoPSettings {
    /// The keys of `dpop:`, each said once: its reference row (type and default, checked
    /// against `DPoPSettings()` by ConfigReferenceTests) and its reader, in this order. The
    /// nonce keys (one of `nonce_keys`, `nonce_keys_file`) are read together, and so are the
    /// gateway's own key and its `alg`.
    static let keyTable = ConfigKeyTable<DPoPSettings, ConfigReader>([
        .init(
            "nonce_keys", type: "list of strings, each at least 32 bytes", default: "a random key per process",
            reader: .group(nonceKeys)),
        .init("nonce_keys_file", type: "path (one key per line)", default: "none", reader: .group(nonceKeys)),
        .init(
            "nonce_lifetime", type: "duration", default: "`5m`",
            checkedBy: ConfigDefault.duration(DPoPSettings().nonceLifetime)
        ) { d, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 10 || v > 3600 { r.problem(p, n, "must be from 10s to 1h") } else { d.nonceLifetime = v }
        },
        .init(
            "replay_cache_entries", type: "number", default: "`1000000`",
            checkedBy: ConfigDefault.number(DPoPSettings().replayCacheEntries)
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Int(s), v >= 1000, v <= 100_000_000 {
                d.replayCacheEntries = v
            } else {
                r.problem(p, n, "must be a number from 1000 to 100000000")
            }
        },
        .init(
            "on_store_failure", type: "`fail_closed` or `fail_open`", default: "`fail_closed`",
            checkedBy: { cell in
                ConfigDefault.firstValue(cell) == "fail_closed" && !DPoPSettings().failOpenOnStoreFailure
            }
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            switch s {
            case "fail_closed": d.failOpenOnStoreFailure = false
            case "fail_open": d.failOpenOnStoreFailure = true
            default: r.problem(p, n, "must be fail_closed or fail_open")
            }
        },
        .init(
            "key_file", type: "path (private JWK or PEM: EC, RSA or Ed25519)",
            default: "a random ES256 key per process", reader: .group(proofKey)),
        .init(
            "alg", type: "`ES256`, `PS256`, `EdDSA` … (fits the key)",
            default: "`ES256` for EC, `RS256` for RSA, `EdDSA` for Ed25519", reader: .group(proofKey))
    ])

    /// `nonce_keys` or `nonce_keys_file`: the HMAC keys of stateless nonces, the first signs.
    static let nonceKeys = ConfigKeyGroup<DPoPSettings, ConfigReader>.lines("nonce_keys") { d, keys, p, r in
        for (j, (key, n)) in keys.enumerated() {
            // RFC 2104 §3 / RFC 7518 §3.2: an HMAC-SHA-256 key at least as long as its output.
            if key.utf8.count < 32 {
                r.problem("\(p)[\(j)]", n, "must be at least 32 bytes (e.g. openssl rand -base64 32)")
            } else {
                d.nonceKeys.append(Array(key.utf8))
            }
        }
    }

    /// `key_file` with its `alg`: the gateway's own DPoP key, for the proofs it sends upstream.
    static let proofKey = ConfigKeyGroup<DPoPSettings, ConfigReader> { d, m, p, r in
        guard let n = m["key_file"], let file = r.string(n, path: "\(p).key_file") else {
            if m["key_file"] == nil, let alg = m["alg"] {
                r.problem("\(p).alg", alg, "needs key_file (the algorithm of the gateway's DPoP key)")
            }
            return
        }
        let (key, alg) = ConfigParser.clientKey(file: file, node: n, algNode: m["alg"], path: p, r)
        guard let key, let alg else { return }
        if let signer = try? DPoPProofSigner(key: key, alg: alg) {
            d.proofSigner = signer
        } else {
            r.problem("\(p).key_file", n, "cannot sign DPoP proofs with \(alg.rawValue) (RFC 9449 §4.2)")
        }
    }
}

extension DPoPRouteConfig {
    /// The keys of a route's `dpop:` (RFC 9449), each read here in this order.
    static let keyTable = ConfigKeyTable<DPoPRouteConfig, ConfigReader>([
        .init(
            "algorithms", type: "list of asymmetric algorithms", default: "`[ES256, ES384, PS256, RS256, EdDSA]`",
            checkedBy: { cell in
                let names = ConfigDefault.firstValue(cell)?.dropFirst().dropLast().split(separator: ",")
                let algs = names?.map { JWSAlgorithm(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
                return algs.map { Set($0.compactMap { $0 }) == DPoPRouteConfig().algorithms && !$0.contains(nil) }
                    ?? false
            }
        ) { d, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            var algs = Set<JWSAlgorithm>()
            for (j, a) in seq.enumerated() {
                guard let s = r.string(a, path: "\(p)[\(j)]") else { continue }
                guard let alg = JWSAlgorithm(rawValue: s) else {
                    r.problem(
                        "\(p)[\(j)]", a,
                        "\"\(s)\" is not one of \(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))")
                    continue
                }
                // RFC 9449 §4.3 check 5: a proof is signed with an asymmetric key.
                if alg.isSymmetric {
                    r.problem("\(p)[\(j)]", a, "DPoP proofs are signed with asymmetric keys; \(s) is not allowed")
                } else {
                    algs.insert(alg)
                }
            }
            if !algs.isEmpty { d.algorithms = algs }
        },
        .init(
            "iat_window", type: "duration", default: "`60s`",
            checkedBy: ConfigDefault.duration(DPoPRouteConfig().iatWindow)
        ) { d, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 1 || v > 86_400 { r.problem(p, n, "must be from 1s to 24h") } else { d.iatWindow = v }
        },
        .init("leeway", type: "duration", default: "`5s`", checkedBy: ConfigDefault.duration(DPoPRouteConfig().leeway))
        {
            d, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v > 300 { r.problem(p, n, "more than 5m of clock skew is not accepted") } else { d.leeway = v }
        },
        .init(
            "nonce", type: "`required` or `off`", default: "`off`",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "off" && !DPoPRouteConfig().nonceRequired }
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            switch s {
            case "required": d.nonceRequired = true
            case "off": d.nonceRequired = false
            default: r.problem(p, n, "must be required or off")
            }
        },
        .init(
            "forward_proof", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(DPoPRouteConfig().forwardProof)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.forwardProof = b }
        },
        .init(
            "jkt_header", type: "header name, or `off`", default: "`X-Forwarded-Jkt`",
            checkedBy: ConfigDefault.text(DPoPRouteConfig().jktHeader ?? "off")
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s == "off" {
                d.jktHeader = nil
            } else if s.isEmpty || !s.utf8.allSatisfy(HeaderRules.isTokenChar)
                || !HeaderRules.forwardsRequestHeader(s, listed: [], reservedPrefix: nil)
                || ["authorization", "cookie", "dpop"].contains(s.lowercased())
            {
                r.problem(p, n, "must be a header name the gateway may set (or off)")
            } else {
                d.jktHeader = s
            }
        }
    ])
}
