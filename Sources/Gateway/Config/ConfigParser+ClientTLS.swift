import Foundation
import JOSE
import OAuth
import Reactor
import Yams

/// `clients.NAME.tls`: the certificate a client presents to its AS (RFC 8705).
extension ConfigParser {
    /// `tls: { cert_file, key_file }` (PEM), both readable. `selfSigned`: the certificate is
    /// also made into the JWK with `x5c` the gateway publishes (RFC 8705 §2.2).
    static func clientTLS(_ node: Node, path p: String, selfSigned: Bool, _ r: ConfigReader) -> ClientTLS? {
        guard let m = r.mapping(node, path: p, section: .clientTLS) else { return nil }
        var keys = ClientTLSKeys()
        ClientTLS.keyTable.read(m, into: &keys, path: p, r)
        func file(_ given: GivenKey<String>?, _ key: String) -> (path: String, text: String)? {
            guard let given, let s = given.value else {
                r.problem(p, node, "needs both cert_file and key_file (PEM)")
                return nil
            }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard let text = try? String(contentsOfFile: full, encoding: .utf8) else {
                r.problem("\(p).\(key)", given.node, "cannot read \(full)")
                return nil
            }
            return (full, text)
        }
        guard let cert = file(keys.certFile, "cert_file"), let key = file(keys.keyFile, "key_file") else { return nil }
        guard let der = firstCertificate(cert.text) else {
            r.problem("\(p).cert_file", keys.certFile?.node, "holds no PEM certificate")
            return nil
        }
        // The pair as OpenSSL loads it for a handshake: a private key, the certificate's (and so
        // the JWK published below describes the certificate's key, RFC 7517 §4.7).
        do {
            _ = try UpstreamTLSContext(
                serverName: "localhost", caFile: nil, certFile: cert.path, keyFile: key.path,
                insecureSkipTLSVerify: true)
        } catch {
            r.problem("\(p).key_file", keys.keyFile?.node, "\(error)")
            return nil
        }
        var tls = ClientTLS(
            certFile: cert.path, keyFile: key.path, thumbprint: Base64URL.encode(Digest.sha256.hash(der)))
        if selfSigned {
            // The certificate's key as a JWK, the certificate itself in x5c (RFC 7517 §4.7:
            // standard base64 of the DER, not base64url).
            guard let privateKey = try? JWK(pem: key.text) else {
                r.problem("\(p).key_file", keys.keyFile?.node, "must hold a private RSA, EC or Ed25519 key (PEM)")
                return nil
            }
            var jwk = privateKey.publicJWK()
            jwk["kid"] = .string("tls-" + tls.thumbprint)
            jwk["x5c"] = .array([.string(Base64.standard(der))])
            tls.publishedJWK = jwk
        }
        return tls
    }

    /// The DER of the first certificate in a PEM text.
    static func firstCertificate(_ pem: String) -> [UInt8]? {
        guard let begin = pem.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = pem.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<pem.endIndex)
        else { return nil }
        let body = pem[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Base64.decodeStandard(String(body))
    }
}
