internal import COpenSSL

/// A digest computed over data that comes in pieces (a request body read from memory, then
/// from its spool file). Owns its `EVP_MD_CTX`.
public final class DigestContext {
    public let digest: Digest
    private let ctx: OpaquePointer

    public init(_ digest: Digest) {
        guard let ctx = EVP_MD_CTX_new(), EVP_DigestInit_ex(ctx, digest.md, nil) == 1 else {
            // Only an allocation failure gets here; nothing can go on without memory.
            fatalError("EVP_MD_CTX_new failed")
        }
        self.digest = digest
        self.ctx = ctx
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count)
    }

    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest; the context is spent afterwards.
    public func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digest.size)
        var len: UInt32 = 0
        EVP_DigestFinal_ex(ctx, &out, &len)
        return out
    }
}
