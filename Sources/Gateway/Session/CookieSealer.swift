import JOSE

/// Seals the gateway's cookies with AES-256-GCM (`session.keys`): the first key seals, every
/// key opens (rotation: add the new key first, drop the old one after a session lifetime).
/// The purpose (session, login state) is bound in as associated data, so one kind of cookie
/// can never be replayed as another.
struct CookieSealer: Sendable {
    let keys: [AEADKey]

    init(keys: [AEADKey]) {
        precondition(!keys.isEmpty, "a cookie sealer needs a key")
        self.keys = keys
    }

    /// Sealing with `session.keys`, or without them this process's random key (then nothing
    /// sealed here opens on another replica or after a restart).
    init(sessionKeysOf config: GatewayConfig) {
        let keys = config.session.keys.isEmpty ? [ProcessSecrets.sessionKey] : config.session.keys
        self.init(keys: keys.compactMap { AEADKey(secret: $0) })
    }

    /// base64url(nonce ‖ ciphertext ‖ tag).
    func seal(_ plaintext: [UInt8], purpose: String) -> String {
        Base64URL.encode(keys[0].seal(plaintext, associatedData: Self.aad(purpose)))
    }

    func open(_ value: String, purpose: String) -> [UInt8]? {
        guard value.utf8.count <= 16 * 1024, let sealed = Base64URL.decode(value) else { return nil }
        let aad = Self.aad(purpose)
        for key in keys { if let plain = key.open(sealed, associatedData: aad) { return plain } }
        return nil
    }

    static func aad(_ purpose: String) -> [UInt8] { Array("tokengate/\(purpose)/v1".utf8) }
}
