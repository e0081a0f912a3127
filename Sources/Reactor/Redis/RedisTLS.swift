/// How a `rediss://` connection checks the server it reaches: the certificate chain against
/// trusted CA certificates and the certificate's name against the host (RFC 6125), over TLS
/// 1.2 or later.
public struct RedisTLS: Sendable, Equatable {
    /// A PEM file of the CA certificates to trust (`ca_file`); nil trusts the system's.
    public var caFile: String?
    /// The name sent as SNI and required in the server's certificate (`server_name`); nil
    /// uses the endpoint's host, an IP address then matched against the certificate's IP
    /// addresses. Set it when connecting by address to a server certified by name.
    public var serverName: String?
    /// Turns off every certificate check, chain and name (`insecure_skip_verify=true`):
    /// anyone on the network path can then read and change every command, password
    /// included. For tests and emergencies only.
    public var insecureSkipTLSVerify: Bool

    /// Verification on, against `caFile` or the system's CAs, for `serverName` or the host.
    public init(caFile: String? = nil, serverName: String? = nil, insecureSkipTLSVerify: Bool = false) {
        self.caFile = caFile
        self.serverName = serverName
        self.insecureSkipTLSVerify = insecureSkipTLSVerify
    }

    /// The query keys of a `rediss://` URL.
    static let queryKeys: Set<String> = ["ca_file", "server_name", "insecure_skip_verify"]

    /// The options of a parsed URL's query, or nil when one is malformed: an empty path or
    /// name, a name that is not a host name, a flag other than `true` or `false`.
    init?(query url: RedisURL) {
        self.init()
        if let caFile = url.value("ca_file") {
            guard !caFile.isEmpty else { return nil }
            self.caFile = caFile
        }
        if let name = url.value("server_name") {
            let allowed: (Character) -> Bool = {
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_" || $0 == ":")
            }
            guard !name.isEmpty, name.allSatisfy(allowed) else { return nil }
            serverName = name
        }
        switch url.value("insecure_skip_verify") {
        case nil, "false": break
        case "true": insecureSkipTLSVerify = true
        default: return nil
        }
    }

    /// The options as URL query text (`?…`, or empty), for descriptions.
    var queryText: String {
        var pairs: [String] = []
        if let caFile { pairs.append("ca_file=\(caFile)") }
        if let serverName { pairs.append("server_name=\(serverName)") }
        if insecureSkipTLSVerify { pairs.append("insecure_skip_verify=true") }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }
}
