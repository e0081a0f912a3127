internal import COpenSSL

/// AES-256-GCM (NIST SP 800-38D) through OpenSSL's EVP API, for values the gateway seals for
/// itself (session and login-state cookies). Output: nonce (12 random bytes) ‖ ciphertext ‖
/// tag (16 bytes). Random 96-bit nonces keep the collision risk negligible up to 2^32
/// seals per key (SP 800-38D §8.3); rotate keys long before that.
public struct AEADKey: Sendable {
    static let nonceSize = 12
    static let tagSize = 16
    let secret: [UInt8]

    /// A 256-bit key.
    public init?(secret: [UInt8]) {
        guard secret.count == 32 else { return nil }
        self.secret = secret
    }

    public func seal(_ plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        let nonce = SecureRandom.bytes(Self.nonceSize)
        guard let ctx = EVP_CIPHER_CTX_new() else { preconditionFailure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: Self.tagSize)
        var len: Int32 = 0
        var total = 0
        let ok =
            EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, secret, nonce) == 1
            && (associatedData.isEmpty
                || EVP_EncryptUpdate(ctx, nil, &len, associatedData, Int32(associatedData.count)) == 1)
            && out.withUnsafeMutableBufferPointer { o in
                guard
                    plaintext.isEmpty
                        || EVP_EncryptUpdate(ctx, o.baseAddress, &len, plaintext, Int32(plaintext.count)) == 1
                else { return false }
                total = Int(len)
                guard EVP_EncryptFinal_ex(ctx, o.baseAddress! + total, &len) == 1 else { return false }
                total += Int(len)
                return true
            }
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(Self.tagSize), &tag) == 1
        precondition(ok, "AES-256-GCM sealing failed")
        return nonce + out.prefix(total) + tag
    }

    /// The plaintext, or nil if `sealed` was not made by this key with this associated data
    /// (tampered, truncated, another key, or another purpose).
    public func open(_ sealed: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard sealed.count >= Self.nonceSize + Self.tagSize else { return nil }
        let nonce = Array(sealed.prefix(Self.nonceSize))
        var tag = Array(sealed.suffix(Self.tagSize))
        let body = Array(sealed[Self.nonceSize..<(sealed.count - Self.tagSize)])
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: body.count + 16)
        var len: Int32 = 0
        var total = 0
        let ok =
            EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, secret, nonce) == 1
            && (associatedData.isEmpty
                || EVP_DecryptUpdate(ctx, nil, &len, associatedData, Int32(associatedData.count)) == 1)
            && out.withUnsafeMutableBufferPointer { o in
                guard body.isEmpty || EVP_DecryptUpdate(ctx, o.baseAddress, &len, body, Int32(body.count)) == 1 else {
                    return false
                }
                total = Int(len)
                // The tag is checked here (in constant time, inside OpenSSL).
                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(Self.tagSize), &tag) == 1,
                    EVP_DecryptFinal_ex(ctx, o.baseAddress! + total, &len) == 1
                else { return false }
                total += Int(len)
                return true
            }
        if !ok {
            OpenSSLError.clear()
            return nil
        }
        return Array(out.prefix(total))
    }
}
