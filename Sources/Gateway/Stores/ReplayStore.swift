import JOSE

/// RFC 9449 §11.1 replay defence: a proof's id is remembered until the proof would no longer
/// be accepted anyway, and an id seen twice is a replay. Implementations: this process's
/// memory (`MemoryReplayCache`, shared by the workers) or Redis (`RedisReplayStore`, shared
/// by replicas). Both pass the same conformance suite.
protocol ReplayStore: AnyObject {
    /// Records `id` until `until` (Unix seconds). `done` runs once, on the caller's loop.
    /// `kind` names the entry in a shared store (its key prefix); ids of different kinds
    /// never collide whatever it says (ReplayID's namespaces).
    func claim(_ id: ReplayID, kind: ReplayKind, until: Int64, now: Int64, done: @escaping (ReplayVerdict) -> Void)
}

extension ReplayStore {
    func claim(_ id: ReplayID, until: Int64, now: Int64, done: @escaping (ReplayVerdict) -> Void) {
        claim(id, kind: .dpopProof, until: until, now: now, done: done)
    }
}

/// What a replay entry remembers, for whoever reads the shared store's keys.
enum ReplayKind: String, Sendable {
    /// A DPoP proof's `jti` (RFC 9449 §11.1).
    case dpopProof = "dpop:jti"
    /// An HTTP Message Signature's `nonce` (RFC 9421 §7.2.2).
    case signatureNonce = "signature:nonce"
    /// A client assertion's `jti` at the authorization server's token endpoint (RFC 7523 §3).
    case clientAssertion = "as:client-assertion:jti"
    /// An ID-JAG's `jti` (draft-ietf-oauth-identity-assertion-authz-grant).
    case identityAssertion = "as:id-jag:jti"
    /// A consent page's ticket, posted once.
    case consentTicket = "as:consent-ticket"
}

enum ReplayVerdict: Equatable {
    /// First use: the request may proceed.
    case fresh
    case replayed
    /// The store could not be reached (down, timed out): the caller fails closed — or open,
    /// where the operator chose availability.
    case unavailable(String)
    /// The store answered but would not record it (full, or an error reply such as OOM):
    /// always refused — failing open here would let a flood of proofs switch replay defence off.
    case refused(String)
}

/// A proof's identity in the replay store: SHA-256 over the key thumbprint and the `jti`,
/// cut to 128 bits — fixed size whatever the client sent, and one client's `jti` can never
/// collide with another's.
struct ReplayID: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A DPoP proof's `jti` under its key's thumbprint (RFC 9449 §11.1). The input is put
    /// together on the stack when it fits 128 bytes, as a thumbprint (43) and a usual `jti`
    /// do (it is hashed on every DPoP request).
    init(jkt: String, jti: String) {
        let k = jkt.utf8.span
        let j = jti.utf8.span
        let n = k.count + 1 + j.count
        guard n <= 128 else {
            var input: [UInt8] = []
            input.reserveCapacity(n)
            input.append(contentsOf: jkt.utf8)
            input.append(0)
            input.append(contentsOf: jti.utf8)
            self.init(digestOf: input.span)
            return
        }
        var input = InlineArray<128, UInt8>(repeating: 0)
        for i in k.indices { input[i] = k[i] }
        for i in j.indices { input[k.count + 1 + i] = j[i] }
        self.init(digestOf: input.span.extracting(0..<n))
    }

    /// A back-channel logout token's `jti` under its issuer (OIDC Back-Channel Logout 1.0 §2.6
    /// step 10): a namespace of its own. The leading 0x01 is never the first byte of a
    /// thumbprint (base64url text), so no logout id can equal a proof's.
    /// An assertion's `jti` under who made it, in a namespace of its own (`kind`: 4 for a
    /// client's assertion, 5 for an ID-JAG, 6 for a consent ticket; 1 is the logout tokens', 2
    /// the signature nonces'), as for logout tokens.
    init(assertionOf issuer: String, jti: String, kind: UInt8) {
        let input = [kind] + Array(issuer.utf8) + [0] + Array(jti.utf8)
        self.init(digestOf: input.span)
    }

    init(logoutTokenOf issuer: String, jti: String) {
        let input = [1] + Array(issuer.utf8) + [0] + Array(jti.utf8)
        self.init(digestOf: input.span)
    }

    /// An HTTP Message Signature's `nonce` under its `keyid` (RFC 9421 §7.2.2): a namespace of
    /// its own (leading 0x02).
    init(signatureNonce nonce: String, keyid: String) {
        let input = [2] + Array(keyid.utf8) + [0] + Array(nonce.utf8)
        self.init(digestOf: input.span)
    }

    private init(digestOf bytes: Span<UInt8>) {
        let digest = Digest.sha256.hash(bytes)
        high = digest[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low = digest[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// 22 base64url characters, for store keys.
    var text: String {
        let bytes =
            (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        return Base64URL.encode(bytes)
    }
}
