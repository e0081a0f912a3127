/// X-Forwarded-For / -Proto / -Host and X-Request-Id for the upstream request. The client's
/// own values are believed only when the TCP peer is in `trusted_proxies`; otherwise the
/// gateway states what it saw itself.
struct ForwardedHeaders: Equatable {
    var forwardedFor: String
    var forwardedProto: String
    var forwardedHost: String?
    var requestID: String
    /// The proto and host came from a trusted proxy's X-Forwarded-Proto/-Host, not from the
    /// connection and its Host header.
    var originFromTrustedProxy = false

    struct Inbound {
        var peer: String
        var peerTrusted: Bool
        var scheme: String
        var host: String?
        var xForwardedFor: [String]
        var xForwardedProto: String?
        var xForwardedHost: String?
        var xRequestID: String?
    }

    /// What the gateway states itself, for a peer that is not a trusted proxy: the peer, the
    /// connection's scheme, the Host, a new request id.
    static func untrusted(peer: String, scheme: String, host: String?, requestID: String) -> ForwardedHeaders {
        ForwardedHeaders(forwardedFor: peer, forwardedProto: scheme, forwardedHost: host, requestID: requestID)
    }

    static func compute(_ inbound: Inbound, newRequestID: () -> String) -> ForwardedHeaders {
        guard inbound.peerTrusted else {
            return untrusted(peer: inbound.peer, scheme: inbound.scheme, host: inbound.host, requestID: newRequestID())
        }
        var chain = inbound.xForwardedFor.joined(separator: ", ")
        chain = chain.isEmpty ? inbound.peer : "\(chain), \(inbound.peer)"
        var proto = inbound.scheme
        if let p = inbound.xForwardedProto?.lowercased(), p == "http" || p == "https" { proto = p }
        var host = inbound.host
        var fromProxy = false
        if let h = inbound.xForwardedHost, HostNormalizer.normalize(h) != nil {
            host = h
            fromProxy = true
        }
        var id: String
        if let given = inbound.xRequestID, isValidRequestID(given) { id = given } else { id = newRequestID() }
        if id.isEmpty { id = newRequestID() }
        return ForwardedHeaders(
            forwardedFor: chain, forwardedProto: proto, forwardedHost: host, requestID: id,
            originFromTrustedProxy: fromProxy)
    }

    /// 1–128 characters of [A-Za-z0-9._:-]: safe in logs and headers.
    static func isValidRequestID(_ id: String) -> Bool {
        let u = id.utf8
        return !u.isEmpty && u.count <= 128
            && u.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
                    || c == 0x2e || c == 0x5f || c == 0x3a || c == 0x2d
            }
    }
}
