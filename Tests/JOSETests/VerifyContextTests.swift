import Dispatch
import Testing

@testable import JOSE

/// One key's pre-initialised verification context is shared by every worker thread and only
/// copied (`VerifyContext`). Here several threads verify against the same shared keys at once,
/// good and bad signatures interleaved, two keys of one algorithm side by side: every answer
/// must be the one a single thread gets. Run it under ThreadSanitizer too:
/// `swift test --sanitize=thread --filter VerifyContextTests`.
@Suite("Shared verification contexts under concurrency")
struct VerifyContextTests {
    static let threads = 8
    static let rounds = 60

    /// Public keys as a verifier imports them (from JWK JSON), each with its signed messages.
    struct Fixture: @unchecked Sendable {
        let keys: [JWK]
        /// messages[k][i], signed by key k as signatures[k][i].
        let messages: [[[UInt8]]]
        let signatures: [[[UInt8]]]
    }

    static func fixture(_ alg: JWSAlgorithm) throws -> Fixture {
        var keys: [JWK] = []
        var messages: [[[UInt8]]] = []
        var signatures: [[[UInt8]]] = []
        for k in 0..<2 {
            let signer = try JWK.generate(for: alg, kid: "k\(k)")
            let msgs = (0..<8).map { i in Array("key \(k) message \(i): \(String(repeating: "x", count: i * 37))".utf8)
            }
            signatures.append(try msgs.map { try signer.sign(alg, message: $0) })
            messages.append(msgs)
            keys.append(try JWK(object: signer.publicJWK()))
        }
        return Fixture(keys: keys, messages: messages, signatures: signatures)
    }

    @Test(
        "concurrent verifications with one shared key give single-threaded answers",
        arguments: [JWSAlgorithm.RS256, .PS256, .ES256, .EdDSA])
    func concurrent(_ alg: JWSAlgorithm) throws {
        let f = try Self.fixture(alg)
        // The shared template is really what verifies (not the fresh-context fallback).
        for key in f.keys { #expect(key.verifyContext(for: alg) != nil) }
        let wrong = Counter()
        DispatchQueue.concurrentPerform(iterations: Self.threads) { t in
            var bad = 0
            for round in 0..<Self.rounds {
                let k = (t + round) % 2
                let i = (t * 3 + round) % 8
                let j = (i + 1 + round % 7) % 8
                let key = f.keys[k]
                let other = f.keys[1 - k]
                var flipped = f.signatures[k][i]
                flipped[(round * 13) % flipped.count] ^= 0x01
                let good = (try? key.verify(alg, message: f.messages[k][i], signature: f.signatures[k][i])) ?? false
                let swapped = (try? key.verify(alg, message: f.messages[k][j], signature: f.signatures[k][i])) ?? false
                let tampered = (try? key.verify(alg, message: f.messages[k][i], signature: flipped)) ?? false
                let crossKey =
                    (try? other.verify(alg, message: f.messages[k][i], signature: f.signatures[k][i])) ?? false
                if !good || swapped || tampered || crossKey { bad += 1 }
            }
            wrong.add(bad)
        }
        #expect(wrong.value == 0)
    }
}

/// A total several threads add to.
final class Counter: @unchecked Sendable {
    private let lock = DispatchSemaphore(value: 1)
    private var total = 0
    func add(_ n: Int) {
        lock.wait()
        total += n
        lock.signal()
    }
    var value: Int {
        lock.wait()
        defer { lock.signal() }
        return total
    }
}
