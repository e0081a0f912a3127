// tokengate-jose-bench: full JWT verification (parse + key selection from a 3-key JWK Set +
// signature + claims policy, through JWTVerifier) against OpenSSL's raw EVP_DigestVerify
// on the same key and message, per algorithm. Not a test: run bench/jose/run.sh.
// The raw loop is what a minimal C verifier does per token: new EVP_MD_CTX, DigestVerifyInit
// (plus PSS parameters), DigestVerify, free — so the ratio is the price of everything JOSE
// adds (base64url, JSON, key selection, r‖s→DER, claims), not of OpenSSL's own set-up.
//
// Two DPoP scenarios (RFC 9449 §4.3, what DPoPProofVerifier does for a gateway request, no
// sockets): `DPoP` parses a fresh client's proof, imports its `jwk`, verifies ES256, computes
// the RFC 7638 thumbprint, checks the claims, `htu` and `ath`; `DPoP-cached` is the same with
// the per-worker key cache a gateway keeps (the client's key imported once), as in steady state.
//
// `--profile SCENARIO --count N` runs N verifications and nothing else, for
// `valgrind --tool=callgrind` (SCENARIO: an algorithm, DPoP, DPoP-cached, or raw-ALG for the
// raw EVP loop); run it under
// `valgrind --tool=callgrind --toggle-collect='*profileLoop*'`, Ir ÷ N per verification.
import COpenSSL
import Glibc
import JOSE
import OAuth

/// Monotonic seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Runs `body` in batches of 64 for at least `seconds`; returns (operations, elapsed).
func run(seconds: Double, _ body: () -> Void) -> (Double, Double) {
    var ops = 0
    let start = now()
    var elapsed = 0.0
    repeat {
        for _ in 0..<64 { body() }
        ops += 64
        elapsed = now() - start
    } while elapsed < seconds
    return (Double(ops), elapsed)
}

/// Operations per second of `a` and of `b`, measured in alternating 250 ms slices so that
/// frequency changes and neighbours' noise fall on both alike.
func interleavedRates(seconds: Double, _ a: () -> Void, _ b: () -> Void) -> (Double, Double) {
    for _ in 0..<200 {
        a()
        b()
    }  // warm-up
    var (opsA, timeA, opsB, timeB) = (0.0, 0.0, 0.0, 0.0)
    for _ in 0..<max(1, Int(seconds / 0.25)) {
        let ra = run(seconds: 0.25, a)
        let rb = run(seconds: 0.25, b)
        opsA += ra.0
        timeA += ra.1
        opsB += rb.0
        timeB += rb.1
    }
    return (opsA / timeA, opsB / timeB)
}

func fail(_ what: String) -> Never {
    let line = "tokengate-jose-bench: \(what)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

/// Owns one OpenSSL key for the raw loop (the same key JOSE imports from its PEM).
final class RawKey {
    let pkey: OpaquePointer
    init(generating alg: JWSAlgorithm) {
        let type: String
        let group: String?
        switch alg {
        case .RS256, .PS256: (type, group) = ("RSA", nil)
        case .ES256: (type, group) = ("EC", "prime256v1")
        case .EdDSA: (type, group) = ("ED25519", nil)
        default: fail("unsupported \(alg)")
        }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, type, nil), EVP_PKEY_keygen_init(ctx) == 1 else {
            fail("keygen init")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        if type == "RSA" { guard EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 2048) == 1 else { fail("RSA bits") } }
        if let group { guard EVP_PKEY_CTX_set_group_name(ctx, group) == 1 else { fail("EC group") } }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else { fail("keygen") }
        pkey = key
    }
    deinit { EVP_PKEY_free(pkey) }

    /// PKCS#8 PEM of the private key, for `JWK(pem:)`.
    var privatePEM: String {
        guard let bio = BIO_new(BIO_s_mem()) else { fail("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else { fail("PEM write") }
        var out = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 4096)
        while case let n = BIO_read(bio, &buf, Int32(buf.count)), n > 0 { out += buf.prefix(Int(n)) }
        return String(decoding: out, as: UTF8.self)
    }

    private func configure(_ alg: JWSAlgorithm, _ pctx: OpaquePointer?) -> Bool {
        guard alg == .PS256 else { return true }
        return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1
    }

    private func md(_ alg: JWSAlgorithm) -> OpaquePointer? { alg == .EdDSA ? nil : EVP_sha256() }

    /// OpenSSL's native signature (DER for ECDSA) over `message`.
    func sign(_ alg: JWSAlgorithm, _ message: [UInt8]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fail("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestSignInit(ctx, &pctx, md(alg), nil, pkey) == 1, configure(alg, pctx) else { fail("sign init") }
        var len = 0
        guard EVP_DigestSign(ctx, nil, &len, message, message.count) == 1 else { fail("sign size") }
        var sig = [UInt8](repeating: 0, count: len)
        guard EVP_DigestSign(ctx, &sig, &len, message, message.count) == 1 else { fail("sign") }
        return Array(sig.prefix(len))
    }

    /// One verification as a minimal C verifier does it: fresh context, init, verify.
    func verify(_ alg: JWSAlgorithm, _ message: [UInt8], _ sig: [UInt8]) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(ctx, &pctx, md(alg), nil, pkey) == 1, configure(alg, pctx) else { return false }
        return EVP_DigestVerify(ctx, sig, sig.count, message, message.count) == 1
    }
}

var seconds = 2.0
var scenarios = ["RS256", "PS256", "ES256", "EdDSA", "DPoP", "DPoP-cached"]
var profile: String?
var count = 1000
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--seconds": seconds = args.popFirst().flatMap(Double.init) ?? seconds
    case "--alg": scenarios = (args.popFirst() ?? "").split(separator: ",").map(String.init)
    case "--profile": profile = args.popFirst()
    case "--count": count = args.popFirst().flatMap(Int.init) ?? count
    default:
        fail(
            "usage: tokengate-jose-bench [--seconds S] [--alg RS256,PS256,ES256,EdDSA,DPoP,DPoP-cached] [--profile SCENARIO --count N]"
        )
    }
}

/// Pads to `width` (right-aligned unless `left`), without Foundation.
func column(_ s: String, _ width: Int, left: Bool = false) -> String {
    let pad = String(repeating: " ", count: max(0, width - s.count))
    return left ? s + pad : pad + s
}

/// x with three decimals, without Foundation's String(format:).
func fixed3(_ x: Double) -> String {
    let thousandths = Int((x * 1000).rounded())
    let frac = String(thousandths % 1000)
    return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac
}

let clock: Int64 = 1_700_000_000
/// The target: full verify at least 0.85× raw OpenSSL for these (PS256 is measured, not targeted).
let targets: [String: Double] = ["RS256": 0.85, "ES256": 0.85, "EdDSA": 0.85]

/// One scenario: the full verification and the raw EVP verification it is compared with.
struct Scenario {
    let full: () -> Bool
    let raw: () -> Bool
}

func jwtScenario(_ alg: JWSAlgorithm) -> Scenario {
    let raw = RawKey(generating: alg)
    guard let key = try? JWK(pem: raw.privatePEM, kid: "signing", alg: alg.rawValue) else {
        fail("JWK(pem:) for \(alg)")
    }
    // The verifier's set: the signing key's public half and two other keys, as an IdP
    // mid-rotation publishes them.
    guard let other1 = try? JWK.generate(for: .ES256, kid: "old-ec"),
        let other2 = try? JWK.generate(for: .RS256, kid: "next-rsa"),
        let set = try? JWKSet(keys: [other1, key, other2].map { try JWK(object: $0.publicJWK()) })
    else { fail("key set") }
    let claims = JSONObject([
        "iss": .string("https://idp.example"), "sub": .string("248289761001"), "aud": .string("https://api.example"),
        "exp": .number(String(clock + 3600)), "iat": .number(String(clock - 10)),
        "scope": .string("orders:read profile"),
        "client_id": .string("s6BhdRkqt3"), "jti": .string("dbe39bf3a3ba4238a513f51d6e1691c4")
    ])
    guard
        let token = try? JWSSigner.sign(
            claims: claims, header: JSONObject(["typ": .string("at+jwt")]), alg: alg, key: key)
    else { fail("sign \(alg)") }
    let policy = JWTClaimsPolicy(
        issuer: "https://idp.example", audiences: ["https://api.example"], leeway: 30, type: "at+jwt")
    let verifier = JWTVerifier(keys: set, algorithms: [alg], policy: policy)
    guard (try? verifier.verify(token, now: clock)) != nil else { fail("the benchmark token does not verify (\(alg))") }

    // The signing input: everything before the last dot.
    guard let lastDot = token.utf8.lastIndex(of: UInt8(ascii: ".")) else { fail("token") }
    let message = Array(token.utf8[..<lastDot])
    let sig = raw.sign(alg, message)
    guard raw.verify(alg, message, sig) else { fail("raw verify (\(alg))") }
    return Scenario(full: { (try? verifier.verify(token, now: clock)) != nil }, raw: { raw.verify(alg, message, sig) })
}

/// A gateway's DPoP check of one request: the proof (ES256, a P-256 `jwk` in its header),
/// its access token (for `ath`), the request's method and URI.
func dpopScenario(cached: Bool) -> Scenario {
    let raw = RawKey(generating: .ES256)
    guard let key = try? JWK(pem: raw.privatePEM, alg: "ES256"),
        let signer = try? DPoPProofSigner(key: key, alg: .ES256)
    else { fail("DPoP key") }
    // An access token of a realistic size (only its hash matters to the proof).
    let token = Base64URL.encode(SecureRandom.bytes(600))
    let uri = "https://api.example/orders/17?expand=items"
    guard let proof = try? signer.proof(method: "GET", url: uri, accessToken: token, now: clock) else {
        fail("DPoP proof")
    }
    let verifier = DPoPProofVerifier()
    let request = DPoPProofVerifier.Request(method: "GET", uri: uri, accessToken: token, now: clock)
    let keyCache = cached ? DPoPKeyCache() : nil
    guard let p = try? verifier.verify(proof, request: request, keyCache: keyCache), p.jkt == signer.jkt else {
        fail("the benchmark proof does not verify")
    }
    guard let lastDot = proof.utf8.lastIndex(of: UInt8(ascii: ".")) else { fail("proof") }
    let message = Array(proof.utf8[..<lastDot])
    let sig = raw.sign(.ES256, message)
    return Scenario(
        full: { (try? verifier.verify(proof, request: request, keyCache: keyCache)) != nil },
        raw: { raw.verify(.ES256, message, sig) })
}

func scenario(_ name: String) -> Scenario {
    switch name {
    case "DPoP": return dpopScenario(cached: false)
    case "DPoP-cached": return dpopScenario(cached: true)
    default:
        guard let alg = JWSAlgorithm(rawValue: name), [.RS256, .PS256, .ES256, .EdDSA].contains(alg) else {
            fail("unknown scenario \(name)")
        }
        return jwtScenario(alg)
    }
}

/// The measured loop, alone in its own function so that callgrind can count it alone
/// (`--toggle-collect='*profileLoop*'`), without key generation and set-up.
@inline(never)
func profileLoop(_ body: () -> Bool, count: Int) -> Int {
    var ok = 0
    for _ in 0..<count where body() { ok += 1 }
    return ok
}

if let profile {
    let useRaw = profile.hasPrefix("raw-")
    let s = scenario(useRaw ? String(profile.dropFirst(4)) : profile)
    let ok = profileLoop(useRaw ? s.raw : s.full, count: count)
    guard ok == count else { fail("\(count - ok) of \(count) verifications failed") }
    exit(0)
}

print("scenario     full verify/s   raw EVP verify/s   ratio   target")
for name in scenarios {
    let s = scenario(name)
    var sink = 0
    let (full, base) = interleavedRates(seconds: seconds, { if s.full() { sink += 1 } }, { if s.raw() { sink += 1 } })
    precondition(sink > 0)
    print(
        column(name, 12, left: true), column(String(Int(full)), 13), column(String(Int(base)), 18),
        column(fixed3(full / base), 7),
        targets[name].map { "  ≥ \(fixed3($0)) " + (full / base >= $0 ? "met" : "NOT met") } ?? "  -")
}
