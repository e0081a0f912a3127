/// What the gateway keeps of a client's certificate that a listener verified (mutual TLS,
/// RFC 8705 §3): enough to check a certificate-bound token and to tell the upstream who
/// called, never the certificate itself.
public struct ClientCertificate: Sendable, Equatable {
    /// SHA-256 of the certificate's DER: what a bound token's `cnf.x5t#S256` names (§3.1).
    public let sha256: [UInt8]
    /// The subject as an RFC 4514 string (`CN=svc,O=Example`), bytes outside printable
    /// ASCII escaped; empty if it could not be written whole.
    public let subject: String
    /// The subjectAltName URIs (a SPIFFE ID, for one), in the certificate's order.
    public let uris: [String]

    public init(sha256: [UInt8], subject: String, uris: [String]) {
        self.sha256 = sha256
        self.subject = subject
        self.uris = uris
    }
}
