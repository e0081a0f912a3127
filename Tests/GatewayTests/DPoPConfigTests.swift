import Foundation
import JOSE
import Testing

@testable import Gateway

@Suite("Config: auth: dpop / token routes, dpop:, store:, public_url:")
struct DPoPConfigTests {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(
            yaml: yaml, environment: ["NONCE": String(repeating: "k", count: 32)], baseDirectory: "/etc/tg", cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    let base = """
        public_url: https://API.example.com:443
        store: memory
        dpop: { nonce_keys: ["${NONCE}"], nonce_lifetime: 2m, replay_cache_entries: 5000 }
        issuers:
          corp: { issuer: "https://idp.example.com/", discovery: true, audiences: [api] }
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path_prefix: /api/ }
            upstream: a
            auth: dpop
            issuers: [corp]
            dpop: { algorithms: [ES256, EdDSA], iat_window: 30s, leeway: 2s, nonce: required, forward_proof: true, jkt_header: X-Client-Key }
          - match: { path_prefix: /mixed/ }
            upstream: a
            auth: token
            issuers: [corp]
          - match: { path_prefix: / }
            upstream: a
            auth: none
        """

    @Test func parsesDPoPSettings() throws {
        let cfg = try parse(base).get()
        #expect(cfg.publicURLs == [PublicURL(scheme: "https", authority: "api.example.com")])
        #expect(cfg.dpop.nonceKeys == [Array(String(repeating: "k", count: 32).utf8)] && cfg.dpop.nonceLifetime == 120)
        #expect(cfg.dpop.replayCacheEntries == 5000)
        let d = try #require(cfg.routes[0].options.auth.tokenRoute?.dpop)
        #expect(
            d.algorithms == [.ES256, .EdDSA] && d.iatWindow == 30 && d.leeway == 2 && d.nonceRequired && d.forwardProof)
        #expect(d.jktHeader == "X-Client-Key")
        // A token route checks DPoP with the defaults; its key header is stripped from clients.
        let t = try #require(cfg.routes[1].options.auth.tokenRoute?.dpop)
        #expect(
            t.algorithms == DPoPRouteConfig.defaultAlgorithms && !t.nonceRequired && t.jktHeader == "X-Forwarded-Jkt")
        let stripped = cfg.strippedIdentityHeaders.map { String(decoding: $0, as: UTF8.self) }
        #expect(stripped.contains("x-client-key") && stripped.contains("x-forwarded-jkt"))
    }

    @Test func redisStores() throws {
        let cfg = try parse(base.replacingOccurrences(of: "store: memory", with: "store: redis://:pw@127.0.0.1:6380/2"))
            .get()
        #expect(cfg.store == .redis(url: "redis://:pw@127.0.0.1:6380/2", prefix: "tokengate:"))
        let mapped = try parse(
            base.replacingOccurrences(of: "store: memory", with: "store: { url: \"redis://r:6379\", prefix: \"tg1:\" }")
        ).get()
        #expect(mapped.store == .redis(url: "redis://r:6379", prefix: "tg1:"))
        for good in [
            "rediss://:pw@redis.internal:6380/0?ca_file=/etc/ca.pem", "redis+sentinel://s1:26379,s2:26379/mymaster/1",
            "redis+cluster://n1:7000,n2:7001,n3:7002"
        ] {
            #expect(
                problems(base.replacingOccurrences(of: "store: memory", with: "store: \"\(good)\"")) == "", "\(good)")
        }
        for bad in ["redis://r:6379/x", "postgres://x", "rediss+cluster://n1:7000", "redis+sentinel://s1:26379"] {
            #expect(
                problems(base.replacingOccurrences(of: "store: memory", with: "store: \"\(bad)\"")).contains(
                    "store: must be memory, redis[s]://"), "\(bad)")
        }
        // Braces would make a hash tag of the prefix, and split one session's keys over slots.
        for bad in ["tg{1}:", "tg{", "has space", String(repeating: "p", count: 65)] {
            #expect(
                problems(
                    base.replacingOccurrences(
                        of: "store: memory", with: "store: { url: \"redis://r:6379\", prefix: \"\(bad)\" }")
                )
                .contains("store.prefix: must be up to 64 printable characters without spaces or braces"), "\(bad)")
        }
    }

    @Test func mistakesAreReported() {
        func has(_ from: String, _ to: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let p = problems(base.replacingOccurrences(of: from, with: to))
            #expect(p.contains(message), "\(to) → \(p)", sourceLocation: sourceLocation)
        }
        has("algorithms: [ES256, EdDSA]", "algorithms: [HS256]", "DPoP proofs are signed with asymmetric keys")
        has("algorithms: [ES256, EdDSA]", "algorithms: [none]", "\"none\" is not one of")
        has("nonce: required", "nonce: sometimes", "must be required or off")
        has("iat_window: 30s", "iat_window: 2w", "is not a duration")
        has("iat_window: 30s", "iat_window: 48h", "must be from 1s to 24h")
        has("jkt_header: X-Client-Key", "jkt_header: Authorization", "must be a header name the gateway may set")
        has("jkt_header: X-Client-Key", "jkt_header: DPoP", "must be a header name the gateway may set")
        has("nonce_keys: [\"${NONCE}\"]", "nonce_keys: [short]", "must be at least 32 bytes")
        has("nonce_lifetime: 2m", "nonce_lifetime: 2s", "must be from 10s to 1h")
        has("public_url: https://API.example.com:443", "public_url: https://api.example.com/base", "must be an origin")
        has("    issuers: [corp]\n    dpop:", "    dpop:", "auth: dpop needs issuers")
        has("auth: dpop", "auth: bearer", "has no effect with auth: bearer")
        has(
            "    dpop: { algorithms", "    token_in_query: true\n    dpop: { algorithms",
            "has no effect with auth: dpop")
        has("auth: none", "auth: none\n    dpop: { nonce: off }", "has no effect with auth: none")
        has("public_url: https://API.example.com:443\n", "", "set public_url (the origin clients use")
    }

    @Test func originsForHTU() throws {
        let list = try parse(
            base.replacingOccurrences(
                of: "public_url: https://API.example.com:443",
                with: "public_url: [https://a.example.com, \"http://b.example.com:8080\"]")
        ).get()
        #expect(
            list.publicURLs == [
                PublicURL(scheme: "https", authority: "a.example.com"),
                PublicURL(scheme: "http", authority: "b.example.com:8080")
            ])
        // Behind trusted proxies, public_url may be left out.
        let proxied = try parse(
            base.replacingOccurrences(
                of: "public_url: https://API.example.com:443", with: "trusted_proxies: [10.0.0.0/8]")
        ).get()
        #expect(proxied.publicURLs.isEmpty)
    }

    @Test func requestOriginRules() {
        let one = [PublicURL(scheme: "https", authority: "api.example.com")]
        let two = one + [PublicURL(scheme: "http", authority: "b.example.com:8080")]
        typealias O = RequestOrigin.Origin
        // One origin: pinned, whatever Host says.
        #expect(
            RequestOrigin.select(publicURLs: one, scheme: "http", host: "evil.example", fromTrustedProxy: false)
                == O(scheme: "https", authority: "api.example.com"))
        // Several: the request's host picks one of them, and only one of them.
        #expect(
            RequestOrigin.select(publicURLs: two, scheme: "http", host: "B.example.com:8080", fromTrustedProxy: false)
                == O(scheme: "http", authority: "b.example.com:8080"))
        #expect(
            RequestOrigin.select(publicURLs: two, scheme: "https", host: "api.example.com:443", fromTrustedProxy: false)
                == O(scheme: "https", authority: "api.example.com"))
        #expect(
            RequestOrigin.select(publicURLs: two, scheme: "http", host: "b.example.com:8081", fromTrustedProxy: false)
                == nil)
        #expect(
            RequestOrigin.select(publicURLs: two, scheme: "https", host: "files.example.com", fromTrustedProxy: false)
                == nil)
        // None configured: a trusted proxy's word only, never a client's Host.
        #expect(
            RequestOrigin.select(publicURLs: [], scheme: "https", host: "api.example.com", fromTrustedProxy: true)
                == O(scheme: "https", authority: "api.example.com"))
        #expect(
            RequestOrigin.select(publicURLs: [], scheme: "http", host: "api.example.com", fromTrustedProxy: false)
                == nil)
    }

    /// `dpop.key_file`: one key for the gateway's own proofs, the same on every replica.
    @Test func theGatewaysDPoPKeyComesFromKeyFile() throws {
        let path = NSTemporaryDirectory() + "tg-dpop-key-\(getpid()).jwk"
        let jwk = try JWK.generate(for: .ES256, kid: "dpop-1").privateJWK()
        _ = FileManager.default.createFile(atPath: path, contents: Data(JSONSerializer.serialize(.object(jwk)).utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let withKey = base.replacingOccurrences(
            of: "replay_cache_entries: 5000", with: "replay_cache_entries: 5000, key_file: \(path)")
        let a = try parse(withKey).get()
        let b = try parse(withKey).get()
        #expect(a.dpop.proofSigner?.alg == .ES256)
        // Two configs (two replicas) sign with one key: the same jkt.
        #expect(a.dpop.proofSigner != nil && a.dpopProofSigner.jkt == b.dpopProofSigner.jkt)
        // Without it: the process's key.
        #expect(try parse(base).get().dpopProofSigner.jkt == GatewayConfig.processDPoPSigner.jkt)
        let rsAlg = base.replacingOccurrences(
            of: "replay_cache_entries: 5000", with: "replay_cache_entries: 5000, key_file: \(path), alg: RS256")
        #expect(problems(rsAlg).contains("dpop.alg: RS256 does not fit the key"), "\(problems(rsAlg))")
        let algOnly = base.replacingOccurrences(
            of: "replay_cache_entries: 5000", with: "replay_cache_entries: 5000, alg: ES256")
        #expect(problems(algOnly).contains("dpop.alg: needs key_file"))
        let missing = base.replacingOccurrences(
            of: "replay_cache_entries: 5000", with: "replay_cache_entries: 5000, key_file: /nonexistent.jwk")
        #expect(problems(missing).contains("dpop.key_file: cannot read"))
    }
}
