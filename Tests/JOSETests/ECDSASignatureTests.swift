import COpenSSL
import Testing

@testable import JOSE

/// `ECDSASignature.der(fromRaw:)` writes the DER itself. It must give exactly the bytes
/// OpenSSL's `i2d_ECDSA_SIG` gives for the same r and s — the way it was done before,
/// kept here as the reference — for every size JWS uses and for the values whose encoding
/// has a corner: zero, leading zero octets, the high bit set, all ones.
@Suite("ECDSA signatures: DER written directly, as OpenSSL writes it")
struct ECDSASignatureTests {
    /// The old conversion, through BIGNUMs and i2d_ECDSA_SIG.
    static func opensslDER(_ raw: [UInt8]) -> [UInt8]? {
        let half = raw.count / 2
        guard raw.count % 2 == 0, half > 0, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        guard let r = BN_bin2bn(raw, Int32(half), nil) else { return nil }
        guard let s = raw.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + half, Int32(half), nil) }) else {
            BN_free(r)
            return nil
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let len = i2d_ECDSA_SIG(sig, &out)
        guard len > 0, let out else { return nil }
        defer { CRYPTO_free(out, #file, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(len)))
    }

    /// Numbers of `size` octets with encoding corners, and random ones.
    static func numbers(size: Int, _ r: inout DifferentialInputs.Random) -> [[UInt8]] {
        var out: [[UInt8]] = [
            Array(repeating: 0, count: size), Array(repeating: 0xff, count: size),
            Array(repeating: 0, count: size - 1) + [1], Array(repeating: 0, count: size - 1) + [0x80],
            [0x80] + Array(repeating: 0, count: size - 1), [0x7f] + Array(repeating: 0xff, count: size - 1)
        ]
        for zeros in 0..<size {
            out.append(
                Array(repeating: 0, count: zeros) + [0x80 | UInt8(zeros % 128)]
                    + Array(repeating: 0x11, count: size - zeros - 1))
            out.append(Array(repeating: 0, count: zeros) + [0x7f] + Array(repeating: 0xee, count: size - zeros - 1))
        }
        for _ in 0..<40 { out.append((0..<size).map { _ in UInt8(r.below(256)) }) }
        return out
    }

    @Test(arguments: [32, 48, 66])
    func sameBytesAsOpenSSL(size: Int) {
        var r = DifferentialInputs.Random(state: UInt64(size))
        let values = Self.numbers(size: size, &r)
        for a in values {
            for b in values.shuffled().prefix(20) {
                let raw = a + b
                #expect(ECDSASignature.der(fromRaw: raw) == Self.opensslDER(raw), "\(raw)")
            }
        }
    }

    @Test func oddOrEmptyInputIsRefused() {
        #expect(ECDSASignature.der(fromRaw: []) == nil)
        #expect(ECDSASignature.der(fromRaw: [1, 2, 3]) == nil)
    }
}
