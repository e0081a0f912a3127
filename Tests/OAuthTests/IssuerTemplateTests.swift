import JOSE
import Testing

@testable import OAuth

@Suite("Issuer templates: multi-tenant iss, the tenant claim, the allow-list, aliases")
struct IssuerTemplateTests {
    static let now: Int64 = 1_800_000_000
    static let key = try! JWK.generate(for: .ES256, kid: "common-1")
    static let allowed = "11111111-1111-1111-1111-111111111111"
    static let other = "22222222-2222-2222-2222-222222222222"
    static let entra = IssuerTemplate(
        "https://login.microsoftonline.com/{tenant}/v2.0", tenants: .only([allowed]), tenantClaim: "tid")!

    static func issuer(_ tenant: String) -> String { "https://login.microsoftonline.com/\(tenant)/v2.0" }

    static let verifier = AccessTokenVerifier(issuers: [
        {
            var p = IssuerPolicy(
                name: "entra", issuer: entra.template, algorithms: [.ES256], audiences: ["api://orders"])
            p.templates = [entra]
            return p
        }(),
        {
            var p = IssuerPolicy(
                name: "google", issuer: "https://accounts.google.com", algorithms: [.ES256], audiences: ["app"])
            p.aliases = ["accounts.google.com"]
            return p
        }()
    ])

    static func token(iss: String, tid: String?, aud: String = "api://orders") -> String {
        var c = JSONObject([
            "iss": .string(iss), "aud": .string(aud), "sub": .string("alice"),
            "exp": .number(String(now + 300)), "iat": .number(String(now))
        ])
        if let tid { c["tid"] = .string(tid) }
        return try! JWSSigner.sign(claims: c, header: JSONObject(), alg: .ES256, key: key)
    }

    func keys(_ name: String) -> JWKSet? { JWKSet(keys: [Self.key]) }

    func failure(_ r: Result<VerifiedAccessToken, AccessTokenVerifier.Failure>) -> AccessTokenVerifier.Failure? {
        if case .failure(let f) = r { return f }
        return nil
    }

    @Test func parsesOnePlaceholderOnly() {
        #expect(IssuerTemplate("https://x/{tenant}/v2.0", tenants: .any) != nil)
        #expect(IssuerTemplate("https://x/v2.0", tenants: .any) == nil)
        #expect(IssuerTemplate("https://x/{tenant}/{tenant}", tenants: .any) == nil)
        #expect(Self.entra.filled("abc") == "https://login.microsoftonline.com/abc/v2.0")
        #expect(Self.entra.template == "https://login.microsoftonline.com/{tenant}/v2.0")
    }

    @Test func allowedTenantWhoseTidFillsItsIss() throws {
        let r = try Self.verifier.verify(
            Self.token(iss: Self.issuer(Self.allowed), tid: Self.allowed), now: Self.now, keys: keys
        ).get()
        #expect(r.issuer == "entra" && r.claims["tid"]?.string == Self.allowed)
    }

    @Test func tenantNotOnTheListIsRefused() {
        let t = Self.token(iss: Self.issuer(Self.other), tid: Self.other)
        #expect(failure(Self.verifier.verify(t, now: Self.now, keys: keys)) == (.tenantRefused(.tenantNotAllowed)))
    }

    @Test func tidThatDoesNotMatchIssIsRefused() {
        // A token of the other tenant claiming the allowed one's tid, or the reverse.
        for (iss, tid) in [(Self.issuer(Self.other), Self.allowed), (Self.issuer(Self.allowed), Self.other)] {
            let t = Self.token(iss: iss, tid: tid)
            #expect(
                failure(Self.verifier.verify(t, now: Self.now, keys: keys))
                    == (.tenantRefused(.tenantMismatch(claim: "tid"))))
        }
    }

    @Test func missingOrUnusableTidIsRefused() {
        for tid in [nil, "", "a/b", "x?y", "%2F", "{tenant}", "a b"] as [String?] {
            let t = Self.token(iss: Self.issuer(Self.allowed), tid: tid)
            #expect(
                failure(Self.verifier.verify(t, now: Self.now, keys: keys))
                    == (.tenantRefused(.missingTenant(claim: "tid"))),
                "tid \(tid ?? "absent")")
        }
    }

    @Test func theTemplateTextItselfIsNoIssuer() {
        // An iss of literally ".../{tenant}/v2.0" must not match the configured text exactly.
        let t = Self.token(iss: Self.entra.template, tid: "{tenant}")
        guard case .failure(.tenantRefused) = Self.verifier.verify(t, now: Self.now, keys: keys) else {
            Issue.record("the template's own text passed as an issuer")
            return
        }
    }

    @Test func shapeThatDoesNotFitIsAnUnknownIssuer() {
        for iss in [
            "https://login.microsoftonline.com/v2.0", "https://login.microsoftonline.com//v2.0",
            "https://sts.windows.net/\(Self.allowed)/", "https://login.microsoftonline.com/\(Self.allowed)/v2.0/x"
        ] {
            #expect(
                failure(Self.verifier.verify(Self.token(iss: iss, tid: Self.allowed), now: Self.now, keys: keys))
                    == (.unknownIssuer), "\(iss)")
        }
    }

    @Test func anyTenantAcceptsEveryTenantButStillMatchesTid() throws {
        var p = IssuerPolicy(
            name: "entra", issuer: Self.entra.template, algorithms: [.ES256], audiences: ["api://orders"])
        p.templates = [IssuerTemplate(Self.entra.template, tenants: .any)!]
        let v = AccessTokenVerifier(issuers: [p])
        #expect(throws: Never.self) {
            try v.verify(Self.token(iss: Self.issuer(Self.other), tid: Self.other), now: Self.now, keys: keys).get()
        }
        #expect(
            failure(v.verify(Self.token(iss: Self.issuer(Self.other), tid: Self.allowed), now: Self.now, keys: keys))
                == (.tenantRefused(.tenantMismatch(claim: "tid"))))
    }

    @Test func aliasesAreOtherExactSpellings() throws {
        for iss in ["https://accounts.google.com", "accounts.google.com"] {
            let r = try Self.verifier.verify(
                Self.token(iss: iss, tid: nil, aud: "app"), now: Self.now, keys: keys
            ).get()
            #expect(r.issuer == "google")
        }
        #expect(
            failure(
                Self.verifier.verify(
                    Self.token(iss: "http://accounts.google.com", tid: nil, aud: "app"), now: Self.now, keys: keys))
                == (.unknownIssuer))
    }

    @Test func allowedTenantOfAnIssParameter() {
        #expect(Self.entra.allowedTenant(ofIssuer: Self.issuer(Self.allowed)) == Self.allowed)
        #expect(Self.entra.allowedTenant(ofIssuer: Self.issuer(Self.other)) == nil)
        #expect(Self.entra.allowedTenant(ofIssuer: "https://evil/\(Self.allowed)/v2.0") == nil)
    }

    @Test func discoveryDocumentIssuerForms() {
        let forms = Self.entra.discoveryIssuers(fetchedAs: "organizations")
        #expect(forms.contains("https://login.microsoftonline.com/{tenantid}/v2.0"))
        #expect(forms.contains("https://login.microsoftonline.com/organizations/v2.0"))
        #expect(!forms.contains("https://login.microsoftonline.com/common/v2.0"))
    }

    @Test func idTokensFollowTheSameRule() throws {
        var v = IDTokenVerifier(issuer: Self.entra.template, clientID: "api://orders", algorithms: [.ES256])
        v.templates = [Self.entra]
        let set = JWKSet(keys: [Self.key])
        _ = try v.verify(
            Self.token(iss: Self.issuer(Self.allowed), tid: Self.allowed), keys: set, nonce: nil, accessToken: nil,
            now: Self.now)
        for (iss, tid) in [
            (Self.issuer(Self.other), Self.other), (Self.issuer(Self.other), Self.allowed),
            (Self.entra.template, "{tenant}")
        ] {
            #expect(throws: JOSEError.self) {
                try v.verify(Self.token(iss: iss, tid: tid), keys: set, nonce: nil, accessToken: nil, now: Self.now)
            }
        }
    }

    @Test func severalTemplatesShareTheTenantRule() throws {
        // Entra ID's v2.0 issuer and its v1 form on sts.windows.net, one issuer.
        let v1 = IssuerTemplate("https://sts.windows.net/{tenant}/", tenants: .only([Self.allowed]))!
        var p = IssuerPolicy(
            name: "entra", issuer: Self.entra.template, algorithms: [.ES256], audiences: ["api://orders"])
        p.templates = [Self.entra, v1]
        let v = AccessTokenVerifier(issuers: [p])
        for iss in [Self.issuer(Self.allowed), "https://sts.windows.net/\(Self.allowed)/"] {
            #expect(throws: Never.self) {
                try v.verify(Self.token(iss: iss, tid: Self.allowed), now: Self.now, keys: keys).get()
            }
        }
        #expect(
            failure(
                v.verify(
                    Self.token(iss: "https://sts.windows.net/\(Self.other)/", tid: Self.other), now: Self.now,
                    keys: keys))
                == .tenantRefused(.tenantNotAllowed))
        #expect(
            failure(
                v.verify(
                    Self.token(iss: "https://sts.windows.net/\(Self.allowed)/", tid: Self.other), now: Self.now,
                    keys: keys))
                == .tenantRefused(.tenantMismatch(claim: "tid")))
        var idv = IDTokenVerifier(issuer: Self.entra.template, clientID: "api://orders", algorithms: [.ES256])
        idv.templates = [Self.entra, v1]
        _ = try idv.verify(
            Self.token(iss: "https://sts.windows.net/\(Self.allowed)/", tid: Self.allowed),
            keys: JWKSet(keys: [Self.key]),
            nonce: nil, accessToken: nil, now: Self.now)
    }
}
