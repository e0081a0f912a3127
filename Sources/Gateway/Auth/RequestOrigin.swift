import OAuth

/// The origin (scheme and authority) a request was addressed to, as far as the gateway can
/// trust it — what a DPoP proof's `htu` must name (RFC 9449 §4.3 check 9).
///   - With `public_url`: one origin is that origin, whatever the request says; with several,
///     the request's host picks one of them and nothing else (a client can only choose
///     among the gateway's own origins).
///   - Without: only a trusted proxy's X-Forwarded-Proto/-Host. A client's own Host header
///     would let it present a proof made for another origin (a resource server that was
///     sent the proof could replay it here).
enum RequestOrigin {
    struct Origin: Equatable {
        var scheme: String
        var authority: String
    }

    /// - host: the effective Host (a trusted proxy's X-Forwarded-Host, or the Host header).
    static func select(publicURLs: [PublicURL], scheme: String, host: String, fromTrustedProxy: Bool) -> Origin? {
        if publicURLs.count == 1 { return Origin(scheme: publicURLs[0].scheme, authority: publicURLs[0].authority) }
        if !publicURLs.isEmpty {
            guard let wanted = HTU.normalize(requestURI: "\(scheme)://\(host)/") else { return nil }
            return publicURLs.first { HTU.normalize(requestURI: "\($0.scheme)://\($0.authority)/") == wanted }
                .map { Origin(scheme: $0.scheme, authority: $0.authority) }
        }
        return fromTrustedProxy && !host.isEmpty ? Origin(scheme: scheme, authority: host) : nil
    }
}
