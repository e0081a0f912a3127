import Testing

@testable import OAuth

/// `HTU.normalize` form by form (RFC 9449 §4.3 check 9, RFC 3986 §6.2.2): what two URIs must
/// share to compare equal, and what is never an `htu`.
@Suite("htu normal form")
struct HTUTests {
    @Test func schemeAndHostLowercasedDefaultPortDroppedEmptyPathSlash() {
        #expect(HTU.normalize("HTTPS://API.Example.COM/Orders/1") == "https://api.example.com/Orders/1")
        #expect(HTU.normalize("https://a.example:443/x") == "https://a.example/x")
        #expect(HTU.normalize("http://a.example:80/x") == "http://a.example/x")
        #expect(HTU.normalize("http://h:80") == "http://h/")
        #expect(HTU.normalize("https://h") == "https://h/")
        // Another scheme's default port, or any other port, stays.
        #expect(HTU.normalize("https://a.example:80/x") == "https://a.example:80/x")
        #expect(HTU.normalize("http://a.example:443/x") == "http://a.example:443/x")
        #expect(HTU.normalize("https://a.example:8443/x") == "https://a.example:8443/x")
        #expect(HTU.normalize("https://a.example:4430/x") == "https://a.example:4430/x")
        // An empty port is the default too (RFC 3986 §6.2.3).
        #expect(HTU.normalize("https://h:/x") == "https://h/x")
        #expect(HTU.normalize("https://[::1]:443/x") == "https://[::1]/x")
        #expect(HTU.normalize("https://[::1]:/x") == "https://[::1]/x")
        // The path keeps its bytes, non-ASCII included.
        #expect(HTU.normalize("https://h/caf%C3%A9/é") == "https://h/caf%C3%A9/é")
    }

    @Test func notAnHTU() {
        for bad in [
            "", "h/x", "/x", "ftp://h/x", "https:/h/x", "https://", "https:///x", "https://u@h/x",
            "https://h/x?q", "https://h/x#f", "httpx://h/", "http:h",
            // The authority is RFC 3986's host [":" port], with a host (RFC 9110 §4.2.1): no
            // port without a host, nothing that only looks like a port (its normal form would
            // not be normal: "h:443:443" → "h:443" → "h"), no bytes outside a reg-name.
            "https://:443/x", "https://:/x", "https://h:443:443/x", "https://h:44a/x", "https://a b/x",
            "https://h\u{e9}/x", "https://h%zz/x", "https://[::1/x", "https://[]/x", "https://[::1]x/",
            "https://[g::1]/x"
        ] {
            #expect(HTU.normalize(bad) == nil, "\(bad)")
        }
    }

    @Test func theRequestsQueryAndFragmentAreCutNotRefused() {
        #expect(HTU.normalize(requestURI: "https://H:443/x?a=1#f") == "https://h/x")
        #expect(HTU.normalize(requestURI: "https://h?a") == "https://h/")
        #expect(HTU.normalize(requestURI: "https://u@h/x") == nil)
    }

    @Test func thePathGoesThroughTheRoutersNormalization() {
        let dots: (String) -> String? = { $0 == "/a/../b" ? "/b" : ($0.contains("%00") ? nil : $0) }
        #expect(HTU.normalize("https://h/a/../b", normalizePath: dots) == "https://h/b")
        #expect(HTU.normalize("https://h", normalizePath: dots) == "https://h/")
        #expect(HTU.normalize("https://h/%00", normalizePath: dots) == nil)
        #expect(HTU.normalize("HTTPS://H:443/a/../b", normalizePath: dots) == "https://h/b")
    }
}
