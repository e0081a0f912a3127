import JOSE
import Testing

@testable import Gateway

/// A replay id is SHA-256 over thumbprint, 0x00, `jti`, cut to 128 bits, however the input
/// is put together (on the stack up to 128 bytes, in an array past that): ids stored in
/// Redis by one version must be found by the next.
@Suite("Replay ids: the digest of thumbprint, zero, jti")
struct ReplayIDTests {
    static func digestID(_ bytes: [UInt8]) -> ReplayID {
        let d = Digest.sha256.hash(bytes)
        return ReplayID(
            high: d[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, low: d[8..<16].reduce(0) { $0 << 8 | UInt64($1) })
    }

    @Test func aKnownValue() {
        // python3: hashlib.sha256(b"k\x00a").digest()[:16]
        #expect(ReplayID(jkt: "k", jti: "a") == ReplayID(high: 0x44c3_38b5_4824_9880, low: 0xacde_b5c1_9478_3491))
    }

    @Test(arguments: [0, 1, 84, 85, 200])
    func anyLength(jtiLength: Int) {
        let jkt = String(repeating: "t", count: 43)
        let jti = String(repeating: "j", count: jtiLength)
        #expect(ReplayID(jkt: jkt, jti: jti) == Self.digestID(Array(jkt.utf8) + [0] + Array(jti.utf8)))
    }

    @Test func logoutIdsHaveANamespaceOfTheirOwn() {
        #expect(
            ReplayID(logoutTokenOf: "https://as", jti: "x")
                == Self.digestID([1] + Array("https://as".utf8) + [0] + Array("x".utf8)))
    }
}
