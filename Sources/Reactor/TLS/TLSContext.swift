internal import CShim
import Glibc

/// Which TLS versions, suites and groups a listener offers: Mozilla's profiles
/// (https://wiki.mozilla.org/Security/Server_Side_TLS) or lists of the operator's own.
public enum TLSProfile: Sendable, Equatable {
    /// TLS 1.2 and 1.3; ECDHE with AES-GCM or ChaCha20-Poly1305 only; X25519, P-256, P-384.
    case intermediate
    /// TLS 1.3 only.
    case modern
    /// OpenSSL list syntax; nil keeps the intermediate list, "" turns that version off.
    case custom(ciphers: String?, ciphersuites: String?, curves: String?)

    var code: Int32 {
        switch self {
        case .intermediate: Int32(TG_TLS_PROFILE_INTERMEDIATE)
        case .modern: Int32(TG_TLS_PROFILE_MODERN)
        case .custom: Int32(TG_TLS_PROFILE_CUSTOM)
        }
    }

    var lists: (ciphers: String?, ciphersuites: String?, curves: String?) {
        if case .custom(let a, let b, let c) = self { return (a, b, c) }
        return (nil, nil, nil)
    }

    /// Why OpenSSL cannot build a context for this profile, or nil if it can.
    public var problem: String? {
        var err = [CChar](repeating: 0, count: 512)
        let l = lists
        return tg_tls_profile_check(code, l.ciphers, l.ciphersuites, l.curves, &err, err.count) == 1
            ? nil : String(nulTerminated: err)
    }
}

/// A certificate chain and its private key, as PEM files.
public struct TLSCertificateFiles: Sendable, Equatable {
    public var certFile: String
    public var keyFile: String

    public init(certFile: String, keyFile: String) {
        self.certFile = certFile
        self.keyFile = keyFile
    }
}

/// A certificate a listener serves, once loaded.
public struct ServedCertificate: Sendable, Equatable {
    public var files: TLSCertificateFiles
    /// The leaf's notAfter, in seconds since the epoch.
    public var notAfter: Double
    /// The leaf's SHA-256 fingerprint (DER), in hex.
    public var fingerprint: String
}

/// A server-side TLS context (OpenSSL `SSL_CTX`) for one listener: its profile, ALPN (`h2`
/// then `http/1.1` when `http2`, else `http/1.1` alone) and the certificates it serves,
/// which `serve(_:)` replaces while connections are open. A handshake gets the
/// certificates whose names match its SNI (exact, then a wildcard), one per key type, so
/// that OpenSSL picks by what the client supports; without SNI, or with an unknown name,
/// the first certificate. Owns the `tg_tls_server`; shared by every worker's server.
public final class TLSContext: @unchecked Sendable {
    private let server: OpaquePointer
    let ctx: UnsafeMutableRawPointer
    /// Connections may choose HTTP/2 in ALPN.
    public let http2: Bool

    public init(profile: TLSProfile, http2: Bool = true) throws {
        var err = [CChar](repeating: 0, count: 512)
        let l = profile.lists
        guard
            let server = tg_tls_server_new(
                profile.code, l.ciphers, l.ciphersuites, l.curves, http2 ? 1 : 0, &err, err.count)
        else { throw ReactorError(String(nulTerminated: err)) }
        self.server = server
        ctx = tg_tls_server_ctx(server)
        self.http2 = http2
    }

    /// One certificate, the intermediate profile.
    public convenience init(certificateFile: String, privateKeyFile: String, http2: Bool = true) throws {
        try self.init(profile: .intermediate, http2: http2)
        _ = try serve([TLSCertificateFiles(certFile: certificateFile, keyFile: privateKeyFile)])
    }

    deinit { tg_tls_server_free(server) }

    /// Asks clients for a certificate that chains to the CAs of `trustClients` (mutual TLS):
    /// one that does not verify ends the handshake, and with `required` so does none at all.
    /// Once, before the listener serves.
    public func verifyClients(required: Bool) {
        tg_tls_server_verify_clients(server, required ? 1 : 0)
    }

    /// Loads the CAs client certificates must chain to, and CRLs for their leaves; used from
    /// the next handshake on. On a file that cannot be read nothing changes and the error
    /// names it.
    public func trustClients(caFile: String, crlFile: String?) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard tg_tls_server_set_client_cas(server, caFile, crlFile, &err, err.count) == 1 else {
            throw ReactorError(String(nulTerminated: err))
        }
    }

    /// Loads every pair, then serves them from the next handshake on. If any pair cannot be
    /// loaded (unreadable, a key that does not match, not valid now) nothing changes and the
    /// error names the file.
    public func serve(_ pairs: [TLSCertificateFiles]) throws -> [ServedCertificate] {
        guard let set = tg_tls_certs_new() else { throw ReactorError("out of memory") }
        var served: [ServedCertificate] = []
        var err = [CChar](repeating: 0, count: 512)
        for (i, pair) in pairs.enumerated() {
            var notAfter = 0.0
            guard tg_tls_certs_add(set, pair.certFile, pair.keyFile, &notAfter, &err, err.count) == 1 else {
                tg_tls_certs_free(set)
                throw ReactorError("\(pair.certFile): \(String(nulTerminated: err))")
            }
            var digest = [UInt8](repeating: 0, count: 32)
            tg_tls_certs_fingerprint(set, Int32(i), &digest)
            let digits = Array("0123456789abcdef")
            let hex = String(digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
            served.append(ServedCertificate(files: pair, notAfter: notAfter, fingerprint: hex))
        }
        let unusable = tg_tls_server_check_certs(server, set, &err, err.count)
        guard unusable == -1 else {
            tg_tls_certs_free(set)
            let file = unusable >= 0 ? pairs[Int(unusable)].certFile : pairs.first?.certFile ?? "-"
            throw ReactorError("\(file): \(String(nulTerminated: err))")
        }
        tg_tls_server_set_certs(server, set)
        return served
    }
}
