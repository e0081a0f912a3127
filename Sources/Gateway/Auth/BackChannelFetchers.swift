import Reactor

/// One worker's HTTP clients for an authorization server's back-channel endpoints (token,
/// PAR, revocation, userinfo, introspection, token exchange): one per issuer, CA file and
/// client certificate files. Connections made with one client's certificate (RFC 8705) never
/// carry another client's requests, and a reload that names other files gets a new client.
/// Redirects are not followed: these requests carry credentials, and must not be sent on
/// elsewhere, perhaps in clear text.
final class BackChannelFetchers {
    let loop: EventLoop
    private var fetchers: [String: HTTPFetcher] = [:]

    init(loop: EventLoop) { self.loop = loop }

    func fetcher(issuer: String, caFile: String?, client: ClientConfig) -> HTTPFetcher {
        let name = [issuer, caFile ?? "", client.tls?.certFile ?? "", client.tls?.keyFile ?? ""]
            .joined(separator: "\u{0}")
        if let f = fetchers[name] { return f }
        var settings = FetchSettings(caFile: caFile, clientCertificate: client.tls?.files)
        settings.maxRedirects = 0
        let f = HTTPFetcher(loop: loop, settings: settings)
        fetchers[name] = f
        return f
    }
}
