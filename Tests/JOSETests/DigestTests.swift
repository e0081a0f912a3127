import Foundation
import Testing

@testable import JOSE

/// SHA-256 runs outside EVP (see `tg_sha256`); its answers must be FIPS 180-4's, whatever
/// the input's length or the way the bytes are handed over.
@Suite("SHA-2 digests")
struct DigestTests {
    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    @Test func sha256KnownAnswers() {
        #expect(
            Self.hex(Digest.sha256.hash([UInt8]()))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Self.hex(Digest.sha256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // FIPS 180-4 example: two blocks.
        #expect(
            Self.hex(Digest.sha256.hash(utf8: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // One million "a": many blocks through one update.
        #expect(
            Self.hex(Digest.sha256.hash([UInt8](repeating: 0x61, count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func everyWayOfPassingBytesAgrees() {
        let text = String(repeating: "eyJhbGciOiJFUzI1NiJ9.", count: 50)
        let want = Digest.sha256.hash(Array(text.utf8))
        #expect(Digest.sha256.hash(utf8: text) == want)
        #expect(Digest.sha256.hash(text.utf8) == want)  // not contiguous storage: copied first
        #expect(Digest.sha256.hash(Array(text.utf8)[...]) == want)
        #expect(Array(text.utf8).withUnsafeBytes { Digest.sha256.hash(bytes: $0) } == want)
    }

    @Test func sha384AndSha512StillThroughEVP() {
        #expect(
            Self.hex(Digest.sha384.hash(Array("abc".utf8)))
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                + "8086072ba1e7cc2358baeca134c825a7")
        #expect(
            Self.hex(Digest.sha512.hash(Array("abc".utf8)))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(Digest.sha384.hash([UInt8]()).count == 48)
    }
}
