import Foundation
import JOSE
import Reactor
import Testing

@testable import Gateway

/// The key-set manager against a real HTTP server on 127.0.0.1 (Reactor's own), one loop.
@Suite("Issuer keys: discovery, single flight, refetch limit, stale-if-error")
struct IssuerKeysTests {
    final class IdP {
        let loop = EventLoop()
        var server: HTTPServer!
        var port: UInt16 = 0
        var issuer: String { "http://127.0.0.1:\(port)" }
        var jwks: String
        var jwksStatus = 200
        var metadataIssuer: String?
        var hits: [String: Int] = [:]

        init(jwks: String) throws {
            self.jwks = jwks
            server = HTTPServer(loop: loop, options: HTTPServerOptions(), tls: nil) { [unowned self] req in
                let path = req.head.target
                self.hits[path, default: 0] += 1
                if path == "/.well-known/openid-configuration" {
                    let body =
                        "{\"issuer\":\"\(self.metadataIssuer ?? self.issuer)\",\"jwks_uri\":\"\(self.issuer)/jwks\"}"
                    req.responder.respond(status: 200, body: Array(body.utf8))
                } else if path == "/jwks" {
                    req.responder.fields.append("Cache-Control", "public, max-age=120")
                    req.responder.respond(status: self.jwksStatus, body: Array(self.jwks.utf8))
                } else {
                    req.responder.respond(status: 404)
                }
            }
            let fd = try Listener.open(host: "127.0.0.1", port: 0)
            port = Listener.port(of: fd)
            try server.serve(listeningSocket: fd)
        }

        /// Runs the loop until `body` calls its `stop`, or 5 s pass.
        func run(_ body: (@escaping () -> Void) -> Void) {
            body { [loop] in loop.stop() }
            loop.schedule(after: 5) { [loop] in loop.stop() }
            loop.run()
        }
    }

    /// A public JWK Set text holding one new ES256 key.
    static func jwks(kid: String) throws -> String {
        JWKSet(keys: [try JWK.generate(for: .ES256, kid: kid)]).publicJSON()
    }

    /// Keys from the IdP's jwks_uri, loaded once before the test goes on.
    static func loadedKeys(_ idp: IdP, clock: ManualClock) -> IssuerKeys {
        let keys = IssuerKeys(
            name: "corp", source: .jwksURI("http://127.0.0.1:\(idp.port)/jwks"),
            fetcher: HTTPFetcher(loop: idp.loop), loop: idp.loop, wallClock: clock)
        idp.run { stop in keys.start { _ in stop() } }
        return keys
    }

    @Test func discoveryThenKeys() throws {
        let jwks = try Self.jwks(kid: "a")
        let idp = try IdP(jwks: jwks)
        let keys = IssuerKeys(
            name: "corp", source: .discovery(issuer: idp.issuer), fetcher: HTTPFetcher(loop: idp.loop),
            loop: idp.loop, wallClock: ManualClock())
        var ok: Bool?
        idp.run { stop in
            keys.start {
                ok = $0
                stop()
            }
        }
        #expect(ok == true)
        #expect(keys.current?.keys.first?.kid == "a")
        #expect(idp.hits["/.well-known/openid-configuration"] == 1 && idp.hits["/jwks"] == 1)
    }

    /// A multi-tenant issuer's document, fetched under one tenant segment, names the template
    /// with Entra ID's literal `{tenantid}`: taken; a document naming another issuer is not.
    @Test func templateDiscoveryTakesTheTenantIdForm() throws {
        for (said, taken) in [("/{tenantid}/v2.0", true), ("/other/v2.0", false)] {
            let idp = try IdP(jwks: try Self.jwks(kid: "a"))
            idp.metadataIssuer = idp.issuer + said
            let keys = IssuerKeys(
                name: "entra",
                source: .discovery(
                    issuer: idp.issuer + "/{tenant}/v2.0", at: idp.issuer,
                    alsoNamed: [idp.issuer + "/{tenantid}/v2.0", idp.issuer + "/organizations/v2.0"]),
                fetcher: HTTPFetcher(loop: idp.loop), loop: idp.loop, wallClock: ManualClock())
            var ok: Bool?
            idp.run { stop in
                keys.start {
                    ok = $0
                    stop()
                }
            }
            #expect(ok == taken, "\(said)")
            #expect((keys.metadata?.issuer == idp.issuer + "/{tenant}/v2.0") == taken)
        }
    }

    @Test func metadataForAnotherIssuerIsRefused() throws {
        let jwks = try Self.jwks(kid: "a")
        let idp = try IdP(jwks: jwks)
        idp.metadataIssuer = "https://evil.example"
        let keys = IssuerKeys(
            name: "corp", source: .discovery(issuer: idp.issuer), fetcher: HTTPFetcher(loop: idp.loop),
            loop: idp.loop, wallClock: ManualClock())
        var ok: Bool?
        idp.run { stop in
            keys.start {
                ok = $0
                stop()
            }
        }
        #expect(ok == false)
        #expect(keys.current == nil)
        #expect(keys.lastError?.contains("does not match") == true)
        #expect(idp.hits["/jwks"] == nil)
    }

    @Test func unknownKidRefetchIsSingleFlightAndRateLimited() throws {
        let jwks = try Self.jwks(kid: "a")
        let idp = try IdP(jwks: jwks)
        let clock = ManualClock()
        let keys = Self.loadedKeys(idp, clock: clock)
        let rotated = try Self.jwks(kid: "b")
        idp.jwks = rotated
        var results: [Bool] = []
        idp.run { stop in
            for _ in 0..<10 {
                keys.refetchForUnknownKid {
                    results.append($0)
                    if results.count == 10 { stop() }
                }
            }
        }
        #expect(results == Array(repeating: true, count: 10))
        #expect(idp.hits["/jwks"] == 2, "ten waiters, one fetch")
        #expect(keys.current?.keys.first?.kid == "b")
        // Another unknown kid within the interval: no fetch at all.
        var again: Bool?
        clock.advance(5)
        keys.refetchForUnknownKid { again = $0 }
        #expect(again == false)
        #expect(idp.hits["/jwks"] == 2)
        // After the interval, one more is allowed.
        clock.advance(30)
        idp.run { stop in
            keys.refetchForUnknownKid {
                again = $0
                stop()
            }
        }
        #expect(again == true)
        #expect(idp.hits["/jwks"] == 3)
    }

    @Test func lastGoodKeysServeWhenTheIdPFails() throws {
        let jwks = try Self.jwks(kid: "a")
        let idp = try IdP(jwks: jwks)
        let clock = ManualClock()
        let keys = Self.loadedKeys(idp, clock: clock)
        idp.jwksStatus = 500
        clock.advance(60)
        var ok: Bool?
        idp.run { stop in
            keys.refetchForUnknownKid {
                ok = $0
                stop()
            }
        }
        #expect(ok == false)
        #expect(keys.current?.keys.first?.kid == "a")
        #expect(keys.lastError == "jwks: HTTP 500")
    }

    @Test func cacheControl() {
        #expect(IssuerKeys.maxAge("public, max-age=300") == 300)
        #expect(IssuerKeys.maxAge("no-store") == 0)
        #expect(IssuerKeys.maxAge("private") == nil)
        #expect(IssuerKeys.maxAge(nil) == nil)
        #expect(IssuerKeys.maxAge("max-age=-5") == nil)
    }
}
