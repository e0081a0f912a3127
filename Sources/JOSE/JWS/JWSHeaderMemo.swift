import Glibc

/// Protected headers parsed before, by their exact base64url bytes. An issuer signs every
/// access token with the same header (`alg`, `typ`, `kid`), so each worker decodes, parses
/// and checks it once per key instead of on every token. The header is a function of those
/// bytes alone, so equal bytes stand for an equal, already checked header. Only the headers
/// of tokens that were accepted whole are kept (`remember`): a stream of unsigned tokens
/// with made-up headers cannot push an issuer's header out. The per-token checks that read
/// the header (`alg` allow-list, key by `kid`, `typ`) still run on every token. One loop's:
/// not shared across threads.
public final class JWSHeaderMemo {
    /// Headers longer than this are parsed every time (an access token's is about 100 bytes).
    static let maxHeaderSize = 512
    /// A few issuers or keys in rotation at once; past that, the oldest slot is reused.
    static let slots = 4

    private var encoded: [[UInt8]] = []
    private var headers: [JWSHeader] = []
    private var next = 0
    public private(set) var hits = 0

    public init() {}

    /// The header kept for exactly these bytes: `CompactJWS`'s `knownHeader`.
    public func header(for bytes: UnsafeRawBufferPointer) -> JWSHeader? {
        guard let base = bytes.baseAddress else { return nil }
        for i in 0..<encoded.count where encoded[i].count == bytes.count {
            let same = encoded[i].withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
            if same {
                hits &+= 1
                return headers[i]
            }
        }
        return nil
    }

    /// Keeps the header of `jws`, a token the caller has accepted, unless it came from here.
    public func remember(_ jws: CompactJWS) {
        guard !jws.headerWasKnown else { return }
        put(Array(jws.encodedHeader), jws.header)
    }

    func put(_ bytes: [UInt8], _ header: JWSHeader) {
        guard !bytes.isEmpty, bytes.count <= Self.maxHeaderSize else { return }
        if encoded.count < Self.slots {
            encoded.append(bytes)
            headers.append(header)
            return
        }
        encoded[next] = bytes
        headers[next] = header
        next = (next + 1) % Self.slots
    }
}
