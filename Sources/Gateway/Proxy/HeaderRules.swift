import Reactor

/// Which headers cross the gateway (RFC 9110 §7.6.1 hop-by-hop fields, RFC 9110 §7.2 Host),
/// decided in one place for requests and responses. Names are compared as bytes,
/// ASCII-case-insensitively, so the request path builds no strings for them.
enum HeaderRules {
    /// Always connection-specific, whatever `Connection` says; plus every `Proxy-*` field.
    static let hopByHop: [[UInt8]] = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"].map {
        Array($0.utf8)
    }

    /// Request fields the gateway sets itself, so a client-sent copy must not pass:
    /// framing (recomputed), Host (per upstream), and the X-Forwarded-* / request-id fields
    /// (taken from the client only when it is a trusted proxy, see `ForwardedHeaders`).
    static let recomputedOnRequest: [[UInt8]] = [
        "host", "content-length", "x-forwarded-for", "x-forwarded-proto",
        "x-forwarded-host", "x-request-id", "forwarded",
        // A client's Expect never passes as sent: the upstream call writes its own
        // `Expect: 100-continue` when it waits for the upstream's 100 (ProxyStage).
        "expect"
    ].map { Array($0.utf8) }

    /// Headers that frameworks, proxies and auth helpers read as the request's URL, method,
    /// host, scheme or client address (the full list is in docs/security.md, "Override headers").
    /// From a client that is not a trusted proxy they would route around the gateway's
    /// decisions: X-Original-URL on Symfony/IIS, method overrides around a `methods:` split,
    /// PHP's `HTTP_CLIENT_IP` helpers, Traefik/Caddy forward auth and nginx `auth_request`
    /// conventions. Dropped unless the TCP peer is in `trusted_proxies`.
    static let trustedOnly: [[UInt8]] = [
        // URL and path
        "x-original-url", "x-rewrite-url", "x-original-uri", "x-forwarded-uri", "x-forwarded-path",
        "x-forwarded-prefix", "x-replaced-path", "x-auth-request-redirect",
        // method
        "x-http-method-override", "x-http-method", "x-method-override", "x-original-method", "x-forwarded-method",
        // host, scheme, port
        "x-host", "x-original-host", "x-forwarded-server", "x-http-host-override", "x-forwarded-port",
        "x-forwarded-scheme", "x-forwarded-ssl", "x-forwarded-protocol", "x-url-scheme", "x-scheme", "front-end-https",
        // client address
        "x-real-ip", "true-client-ip", "x-client-ip", "client-ip", "x-originating-ip", "x-remote-ip", "x-remote-addr",
        "x-cluster-client-ip", "x-original-forwarded-for", "x-forwarded", "forwarded-for", "cf-connecting-ip",
        "cf-connecting-ipv6", "fastly-client-ip", "x-azure-clientip", "x-azure-socketip", "x-appengine-user-ip",
        "wl-proxy-client-ip", "x-proxyuser-ip"
    ].map { Array($0.utf8) }

    /// Whole families with the same meaning: Envoy trusts `x-envoy-*` (original path,
    /// external address, internal) only from inside its mesh and strips them at the edge;
    /// oauth2-proxy's `X-Auth-Request-*` carry a verdict and an identity.
    static let trustedOnlyPrefixes: [[UInt8]] = ["x-envoy-", "x-auth-request-"].map { Array($0.utf8) }

    static let proxyPrefix = Array("proxy-".utf8)
    static let requestID = Array("x-request-id".utf8)

    /// The fixed lists above as one table (one lookup per field).
    static let fixedNames: [(name: String, lists: HeaderNameTable.Lists)] =
        hopByHop.map { (String(decoding: $0, as: UTF8.self), .hopByHop) }
        + recomputedOnRequest.map { (String(decoding: $0, as: UTF8.self), .recomputedOnRequest) }
        + trustedOnly.map { (String(decoding: $0, as: UTF8.self), .trustedOnly) }
        + [("x-request-id", .recomputedOnResponse)]
    static let names = HeaderNameTable(fixedNames)

    /// Calls `body` with each connection option the `Connection` fields list (RFC 9110
    /// §7.6.1: a comma-separated list of tokens), OWS trimmed, as sent.
    static func forEachConnectionOption(_ fields: HTTP1Fields, _ body: (Span<UInt8>) -> Void) {
        fields.forEachValue(named: "Connection") { value in
            var start = 0
            while start <= value.count {
                var end = start
                while end < value.count && value[end] != UInt8(ascii: ",") { end += 1 }
                var a = start
                var b = end
                while a < b && (value[a] == 0x20 || value[a] == 0x09) { a += 1 }
                while b > a && (value[b - 1] == 0x20 || value[b - 1] == 0x09) { b -= 1 }
                if b > a { body(value.extracting(a..<b)) }
                start = end + 1
            }
        }
    }

    /// The field names a `Connection` header lists (they are hop-by-hop too), lowercased,
    /// leaving out the ones always dropped anyway (`keep-alive`, `upgrade`…): the usual
    /// `Connection: keep-alive` then costs no allocation.
    static func connectionTokens(_ fields: HTTP1Fields) -> [[UInt8]] {
        var out: [[UInt8]] = []
        forEachConnectionOption(fields) { token in
            guard !equalsAny(token, hopByHop) else { return }
            var lower: [UInt8] = []
            lower.reserveCapacity(token.count)
            for i in token.indices { lower.append(HTTP1Fields.lower(token[i])) }
            out.append(lower)
        }
        return out
    }

    /// Whether a `Connection` field lists `option` (lowercase).
    static func connectionLists(_ fields: HTTP1Fields, _ option: [UInt8]) -> Bool {
        var found = false
        forEachConnectionOption(fields) { if !found && equals($0, option) { found = true } }
        return found
    }

    static func isHopByHop(_ name: Span<UInt8>, listed: [[UInt8]]) -> Bool {
        names.lists(name).contains(.hopByHop) || hasPrefix(name, proxyPrefix) || equalsAny(name, listed)
    }

    /// Whether a client request header is forwarded upstream as sent. Names with `_` never
    /// are: CGI, WSGI and PHP turn `X_Forwarded_User` into the same variable as
    /// `X-Forwarded-User`, which would get around every strip rule (nginx drops them too).
    /// `trustedOnlyExtra`: the config's `trusted_proxy_headers`, lowercased, added to the list.
    static func forwardsRequestHeader(
        _ name: Span<UInt8>, listed: [[UInt8]], reservedPrefix: [UInt8]?,
        peerTrusted: Bool = false, trustedOnlyExtra: [[UInt8]] = []
    ) -> Bool {
        var lists = names.lists(name)
        if equalsAny(name, trustedOnlyExtra) { lists.insert(.trustedOnly) }
        return forwardsRequestHeader(
            name, lists: lists, listed: listed, reservedPrefix: reservedPrefix, peerTrusted: peerTrusted)
    }

    /// The same, for a name already looked up (`lists`: every list it is on, the config's
    /// trusted-only additions included).
    @inline(__always)
    static func forwardsRequestHeader(
        _ name: Span<UInt8>, lists: HeaderNameTable.Lists, listed: [[UInt8]], reservedPrefix: [UInt8]?,
        peerTrusted: Bool
    ) -> Bool {
        if !lists.isDisjoint(with: [.hopByHop, .recomputedOnRequest]) { return false }
        if name.contains(UInt8(ascii: "_")) || hasPrefix(name, proxyPrefix) { return false }
        if !listed.isEmpty && equalsAny(name, listed) { return false }
        if !peerTrusted && (lists.contains(.trustedOnly) || hasTrustedOnlyPrefix(name)) { return false }
        if let reservedPrefix, hasPrefix(name, reservedPrefix) { return false }
        return true
    }

    private static func hasTrustedOnlyPrefix(_ name: Span<UInt8>) -> Bool {
        for prefix in trustedOnlyPrefixes where hasPrefix(name, prefix) { return true }
        return false
    }

    /// Whether only a trusted proxy may send this header (the built-in list, its families, and
    /// the config's additions).
    static func isTrustedOnly(_ name: Span<UInt8>, extra: [[UInt8]] = []) -> Bool {
        names.lists(name).contains(.trustedOnly) || hasTrustedOnlyPrefix(name) || equalsAny(name, extra)
    }

    /// Whether an upstream response header is passed to the client. Content-Length stays
    /// (so the client gets the same framing); Transfer-Encoding goes (libevent re-frames).
    static func forwardsResponseHeader(_ name: Span<UInt8>, listed: [[UInt8]]) -> Bool {
        let lists = names.lists(name)
        if !lists.isDisjoint(with: [.hopByHop, .recomputedOnResponse]) || hasPrefix(name, proxyPrefix) { return false }
        return listed.isEmpty || !equalsAny(name, listed)
    }

    /// RFC 9110 §5.6.2 tchar.
    static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }

    // MARK: ASCII case-insensitive byte comparison (`lower` is already lowercase)

    @inline(__always)
    static func equals(_ name: Span<UInt8>, _ lower: [UInt8]) -> Bool {
        guard name.count == lower.count else { return false }
        let wanted = lower.span
        for i in wanted.indices where name[i] | (name[i] >= 0x41 && name[i] <= 0x5a ? 0x20 : 0) != wanted[i] {
            return false
        }
        return true
    }

    /// Whether `name` is one of `names` (any case), for lists of names held as strings.
    static func equalsAnyName(_ name: Span<UInt8>, _ names: [String]) -> Bool {
        for other in names where other.utf8.count == name.count {
            let o = other.utf8.span
            var same = true
            for i in o.indices where HTTP1Fields.lower(o[i]) != HTTP1Fields.lower(name[i]) {
                same = false
                break
            }
            if same { return true }
        }
        return false
    }

    static func equalsAny(_ name: Span<UInt8>, _ lowers: [[UInt8]]) -> Bool {
        for l in lowers where equals(name, l) { return true }
        return false
    }

    static func hasPrefix(_ name: Span<UInt8>, _ lower: [UInt8]) -> Bool {
        guard name.count >= lower.count else { return false }
        return equals(name.extracting(first: lower.count), lower)
    }
}

extension HeaderRules {
    /// String forms of the rules, for callers (and tests) that hold Swift strings.
    static func forwardsRequestHeader(
        _ name: String, listed: [[UInt8]], reservedPrefix: String?,
        peerTrusted: Bool = false, trustedOnlyExtra: [[UInt8]] = []
    ) -> Bool {
        let prefix = reservedPrefix.map { Array($0.lowercased().utf8) }
        return forwardsRequestHeader(
            name.utf8.span, listed: listed, reservedPrefix: prefix, peerTrusted: peerTrusted,
            trustedOnlyExtra: trustedOnlyExtra)
    }

    static func forwardsResponseHeader(_ name: String, listed: [[UInt8]]) -> Bool {
        forwardsResponseHeader(name.utf8.span, listed: listed)
    }

    /// `value` begins with `lower` (lowercase ASCII), ASCII case-insensitively.
    static func startsCaseless(_ value: Span<UInt8>, _ lower: StaticString) -> Bool {
        lower.withUTF8Buffer { prefix in
            guard value.count >= prefix.count else { return false }
            for i in 0..<prefix.count where HTTP1Fields.lower(value[i]) != prefix[i] { return false }
            return true
        }
    }

    /// An interim response (103 Early Hints) as the client gets it: what the final answer may
    /// not carry, an interim one may not either — the fields the gateway owns (`dropped`:
    /// DPoP-Nonce, …) and cookies (which could name the gateway's own).
    static func interimHead(_ head: HTTPResponseHead, dropping dropped: [String]) -> HTTPResponseHead {
        let listed = connectionTokens(head.fields)
        let dropped = dropped + ["Set-Cookie"]
        return HTTPResponseHead(
            status: head.status,
            fields: head.fields.filter(names: {
                forwardsResponseHeader($0, listed: listed) && !equalsAnyName($0, dropped)
            }))
    }
}
