/// Which headers cross the gateway (RFC 9110 §7.6.1 hop-by-hop fields, RFC 9110 §7.2 Host),
/// decided in one place for requests and responses.
public enum HeaderRules {
    /// Always connection-specific, whatever `Connection` says; plus every `Proxy-*` field.
    static let hopByHop: Set<String> = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"]

    /// Request fields the gateway sets itself, so a client-sent copy must not pass:
    /// framing (recomputed), Host (per upstream), and the X-Forwarded-* / request-id fields
    /// (taken from the client only when it is a trusted proxy, see `ForwardedHeaders`).
    static let recomputedOnRequest: Set<String> = ["host", "content-length", "x-forwarded-for",
                                                    "x-forwarded-proto", "x-forwarded-host", "x-request-id",
                                                    "forwarded"]

    /// The field names a `Connection` header lists (they are hop-by-hop too).
    public static func connectionTokens(_ values: [String]) -> Set<String> {
        var out = Set<String>()
        for v in values {
            for token in v.split(separator: ",") {
                let t = token.trimmed().lowercased()
                if !t.isEmpty { out.insert(t) }
            }
        }
        return out
    }

    public static func isHopByHop(_ lowerName: String, listed: Set<String>) -> Bool {
        hopByHop.contains(lowerName) || lowerName.hasPrefix("proxy-") || listed.contains(lowerName)
    }

    /// Whether a client request header is forwarded upstream as sent.
    public static func forwardsRequestHeader(_ name: String, listed: Set<String>, reservedPrefix: String?) -> Bool {
        let lower = name.lowercased()
        if isHopByHop(lower, listed: listed) || recomputedOnRequest.contains(lower) { return false }
        if let reservedPrefix, lower.hasPrefix(reservedPrefix) { return false }
        return true
    }

    /// Whether an upstream response header is passed to the client. Content-Length stays
    /// (so the client gets the same framing); Transfer-Encoding goes (libevent re-frames).
    public static func forwardsResponseHeader(_ name: String, listed: Set<String>) -> Bool {
        let lower = name.lowercased()
        return !isHopByHop(lower, listed: listed) && lower != "x-request-id"
    }

    /// RFC 9110 §5.6.2 tchar.
    public static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }
}

private extension Substring {
    /// Without leading and trailing optional whitespace (RFC 9110 §5.6.3 OWS).
    func trimmed() -> Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
