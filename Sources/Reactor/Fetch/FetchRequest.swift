/// An HTTP request to an identity provider (discovery, JWKS, token, introspection…).
public struct FetchRequest: Sendable {
    public var url: String
    /// nil: GET; otherwise POST with this body.
    public var body: [UInt8]?
    /// Another method than GET or POST (a stream's PATCH or DELETE, SSF 1.0 §8.1.1); nil: as
    /// `body` says.
    public var method: String?
    public var headers: [String]
    public var timeout: Double
    public var connectTimeout: Double
    /// Responses larger than this fail (a hostile or broken IdP cannot exhaust memory).
    public var maxResponseBytes: Int

    public init(
        url: String, body: [UInt8]? = nil, headers: [String] = [], timeout: Double = 10,
        connectTimeout: Double = 3, maxResponseBytes: Int = 1 << 20, method: String? = nil
    ) {
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.maxResponseBytes = maxResponseBytes
    }
}

public struct FetchResponse: Sendable {
    public var status: Int
    /// Header lines of the final response, names lowercased.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name == lower }?.value
    }
}

/// A fetch that failed: its `kind` to branch on, and a description for the log.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server could not be reached or the transfer broke off (a libcurl error).
        case transfer
        /// The server answered with more than `FetchRequest.maxResponseBytes`: an answer,
        /// refused, not a failure to reach it.
        case responseTooLarge
        /// The request was never sent: a header line or the URL it was given holds a byte no
        /// field or URL may (`FieldSyntax`), whatever its source.
        case refusedRequest
    }

    public var kind: Kind
    public var description: String
    public init(_ kind: Kind = .transfer, description: String) {
        self.kind = kind
        self.description = description
    }
}

/// TLS and transport settings shared by every fetch (one place, so every call to an AS is hardened alike).
public struct FetchSettings: Sendable {
    /// CA bundle file; nil uses the system default.
    public var caFile: String?
    public var maxRedirects = 3
    /// Disables certificate verification. For local development only; the name says so.
    public var insecureSkipTLSVerify = false
    /// A client certificate chain and its private key (PEM files) presented in every TLS
    /// handshake (mutual TLS, RFC 8705). Read by curl per connection, so a rotated pair is
    /// used from the next connection on.
    public var clientCertificate: (certFile: String, keyFile: String)?
    /// Where a client chose the URL (a client metadata document): connect only to public
    /// addresses, judged on the address connected to (no proxy). `.publicOrLoopback` lets a
    /// development setup on one machine through.
    public var addresses = AddressPolicy.any

    public enum AddressPolicy: Sendable {
        case any, publicOnly, publicOrLoopback
    }

    public init(caFile: String? = nil, clientCertificate: (certFile: String, keyFile: String)? = nil) {
        self.caFile = caFile
        self.clientCertificate = clientCertificate
    }
}
