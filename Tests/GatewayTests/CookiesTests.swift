import Testing

@testable import Gateway

@Suite("Reading the gateway's cookies (RFC 6265): chunks and tossed duplicates")
struct CookiesTests {
    @Test func chunksJoin() {
        let c = Cookies(cookieHeaders: ["s=abc; s_1=def", "other=1"])
        #expect(c.value("s") == "abcdef" && !c.isConflicting("s"))
    }

    @Test func theSameValueTwiceIsOneCookie() {
        let c = Cookies(cookieHeaders: ["s=abc; x=1", "s=abc"])
        #expect(c.value("s") == "abc" && !c.isConflicting("s"))
    }

    /// RFC 6265 §8.6: a sibling subdomain (or any plain-http page with insecure cookies) can
    /// set a second cookie of the same name; which one the browser sends first is not ours to
    /// trust, so neither counts.
    @Test(arguments: [["s=ours; s=tossed"], ["s=tossed; s=ours"], ["s=ours", "s=tossed"], ["s=ours; s_1=a; s_1=b"]])
    func twoDifferentValuesGiveNone(headers: [String]) {
        let c = Cookies(cookieHeaders: headers)
        #expect(c.value("s") == nil && c.isConflicting("s"))
        #expect(Cookies(cookieHeaders: headers + ["t=1"]).value("t") == "1", "other names are unaffected")
    }
}
