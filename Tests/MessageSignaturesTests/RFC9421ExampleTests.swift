import JOSE
import Testing

@testable import MessageSignatures

/// RFC 9421 Appendix B.2: the signature bases of the test request and response rebuilt byte
/// for byte, and the RFC's signatures verified with its test keys (Appendix B.1). The keys
/// and values are the RFC's own (also in its errata-free text at rfc-editor.org).
@Suite("RFC 9421 Appendix B: signature bases and signatures")
struct RFC9421ExampleTests {
    static let rsaPSS = try! JWK(
        pem: """
            -----BEGIN PUBLIC KEY-----
            MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAr4tmm3r20Wd/PbqvP1s2
            +QEtvpuRaV8Yq40gjUR8y2Rjxa6dpG2GXHbPfvMs8ct+Lh1GH45x28Rw3Ry53mm+
            oAXjyQ86OnDkZ5N8lYbggD4O3w6M6pAvLkhk95AndTrifbIFPNU8PPMO7OyrFAHq
            gDsznjPFmTOtCEcN2Z1FpWgchwuYLPL+Wokqltd11nqqzi+bJ9cvSKADYdUAAN5W
            Utzdpiy6LbTgSxP7ociU4Tn0g5I6aDZJ7A8Lzo0KSyZYoA485mqcO0GVAdVw9lq4
            aOT9v6d+nb4bnNkQVklLQ3fVAvJm+xdDOp9LCNCN48V2pnDOkFV6+U9nV5oyc6XI
            2wIDAQAB
            -----END PUBLIC KEY-----
            """, kid: "test-key-rsa-pss")
    static let eccP256 = try! JWK(
        pem: """
            -----BEGIN PUBLIC KEY-----
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqIVYZVLCrPZHGHjP17CTW0/+D9Lf
            w0EkjqF7xB4FivAxzic30tMM4GF+hR6Dxh71Z50VGGdldkkDXZCnTNnoXQ==
            -----END PUBLIC KEY-----
            """, kid: "test-key-ecc-p256")
    static let ed25519 = try! JWK(
        pem: """
            -----BEGIN PUBLIC KEY-----
            MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=
            -----END PUBLIC KEY-----
            """, kid: "test-key-ed25519")
    static let ed25519Private = try! JWK(
        pem: """
            -----BEGIN PRIVATE KEY-----
            MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
            -----END PRIVATE KEY-----
            """, kid: "test-key-ed25519")
    static let sharedSecret = try! JWK(
        json:
            #"{"kty":"oct","kid":"test-shared-secret","k":"\#(Base64URL.encode(Base64.decodeStandard("uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBtbmHhIDi6pcl8jsasjlTMtDQ==")!))"}"#
    )

    static let requestDigest =
        "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"
    static let responseDigest =
        "sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:"

    /// B.2's test-request, with the signature fields of one example added.
    static func request(_ extra: [(String, String)] = []) -> SignedMessage {
        let fields: [(String, String)] =
            [
                ("host", "example.com"), ("date", "Tue, 20 Apr 2021 02:07:55 GMT"),
                ("content-type", "application/json"), ("content-digest", requestDigest), ("content-length", "18")
            ] + extra
        return SignedMessage(
            method: "POST", scheme: "https", authority: "example.com", target: "/foo?param=Value&Pet=dog",
            fields: fields.map { SignedMessage.Field(name: $0.0, value: $0.1) })
    }

    static func response(_ extra: [(String, String)] = []) -> SignedMessage {
        let fields: [(String, String)] =
            [
                ("date", "Tue, 20 Apr 2021 02:07:56 GMT"), ("content-type", "application/json"),
                ("content-digest", responseDigest), ("content-length", "23")
            ] + extra
        return SignedMessage(
            status: 200, fields: fields.map { SignedMessage.Field(name: $0.0, value: $0.1) }, answering: request())
    }

    static func signed(_ message: SignedMessage, _ label: String) throws -> MessageSignatureFields.Labeled {
        let fields = try MessageSignatureFields(
            input: message.lines("signature-input").first, signature: message.lines("signature").first)
        return try #require(fields.signatures.first { $0.label == label })
    }

    static func base(_ message: SignedMessage, _ label: String) throws -> String {
        String(decoding: try SignatureBase.build(try signed(message, label).parameters, of: message), as: UTF8.self)
    }

    @Test("B.2.1: minimal signature, rsa-pss-sha512")
    func minimal() throws {
        let message = Self.request([
            (
                "signature-input",
                #"sig-b21=();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd""#
            ),
            (
                "signature",
                "sig-b21=:d2pmTvmbncD3xQm8E9ZV2828BjQWGgiwAaw5bAkgibUopemLJcWDy/lkbbHAve4cRAtx31Iq786U7it++wgGxbtRxf8Udx7zFZsckzXaJMkA7ChG52eSkFxykJeNqsrWH5S+oxNFlD4dzVuwe8DhTSja8xxbR/Z2cOGdCbzR72rgFWhzx2VjBqJzsPLMIQKhO4DGezXehhWwE56YCE+O6c0mKZsfxVrogUvA4HELjVKWmAvtl6UnCh8jYzuVG5WSb/QEVPnP5TmcAnLH1g+s++v6d4s8m0gCw1fV5/SITLq9mhho8K3+7EPYTU8IU1bLhdxO5Nyt8C8ssinQ98Xw9Q==:"
            )
        ])
        #expect(
            try Self.base(message, "sig-b21")
                == #""@signature-params": ();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd""#
        )
        let algorithm = try SignatureVerifier.verify(
            try Self.signed(message, "sig-b21"), in: message, with: Self.rsaPSS)
        #expect(algorithm.name == "rsa-pss-sha512")
    }

    @Test("B.2.2: selective components, a query parameter and a tag")
    func selective() throws {
        let message = Self.request([
            (
                "signature-input",
                #"sig-b22=("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example""#
            ),
            (
                "signature",
                "sig-b22=:LjbtqUbfmvjj5C5kr1Ugj4PmLYvx9wVjZvD9GsTT4F7GrcQEdJzgI9qHxICagShLRiLMlAJjtq6N4CDfKtjvuJyE5qH7KT8UCMkSowOB4+ECxCmT8rtAmj/0PIXxi0A0nxKyB09RNrCQibbUjsLS/2YyFYXEu4TRJQzRw1rLEuEfY17SARYhpTlaqwZVtR8NV7+4UKkjqpcAoFqWFQh62s7Cl+H2fjBSpqfZUJcsIk4N6wiKYd4je2U/lankenQ99PZfB4jY3I5rSV2DSBVkSFsURIjYErOs0tFTQosMTAoxk//0RoKUqiYY8Bh0aaUEb0rQl3/XaVe4bXTugEjHSw==:"
            )
        ])
        #expect(
            try Self.base(message, "sig-b22") == """
                "@authority": example.com
                "content-digest": \(Self.requestDigest)
                "@query-param";name="Pet": dog
                "@signature-params": ("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example"
                """)
        try SignatureVerifier.verify(try Self.signed(message, "sig-b22"), in: message, with: Self.rsaPSS)
    }

    @Test("B.2.3: full coverage, rsa-pss-sha512")
    func fullCoverage() throws {
        let message = Self.request([
            (
                "signature-input",
                #"sig-b23=("date" "@method" "@path" "@query" "@authority" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-rsa-pss""#
            ),
            (
                "signature",
                "sig-b23=:bbN8oArOxYoyylQQUU6QYwrTuaxLwjAC9fbY2F6SVWvh0yBiMIRGOnMYwZ/5MR6fb0Kh1rIRASVxFkeGt683+qRpRRU5p2voTp768ZrCUb38K0fUxN0O0iC59DzYx8DFll5GmydPxSmme9v6ULbMFkl+V5B1TP/yPViV7KsLNmvKiLJH1pFkh/aYA2HXXZzNBXmIkoQoLd7YfW91kE9o/CCoC1xMy7JA1ipwvKvfrs65ldmlu9bpG6A9BmzhuzF8Eim5f8ui9eH8LZH896+QIF61ka39VBrohr9iyMUJpvRX2Zbhl5ZJzSRxpJyoEZAFL2FUo5fTIztsDZKEgM4cUA==:"
            )
        ])
        #expect(
            try Self.base(message, "sig-b23") == """
                "date": Tue, 20 Apr 2021 02:07:55 GMT
                "@method": POST
                "@path": /foo
                "@query": ?param=Value&Pet=dog
                "@authority": example.com
                "content-type": application/json
                "content-digest": \(Self.requestDigest)
                "content-length": 18
                "@signature-params": ("date" "@method" "@path" "@query" "@authority" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-rsa-pss"
                """)
        try SignatureVerifier.verify(try Self.signed(message, "sig-b23"), in: message, with: Self.rsaPSS)
    }

    @Test("B.2.4: a response signed with ecdsa-p256-sha256")
    func response() throws {
        let message = Self.response([
            (
                "signature-input",
                #"sig-b24=("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256""#
            ),
            (
                "signature",
                "sig-b24=:wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==:"
            )
        ])
        #expect(
            try Self.base(message, "sig-b24") == """
                "@status": 200
                "content-type": application/json
                "content-digest": \(Self.responseDigest)
                "content-length": 23
                "@signature-params": ("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"
                """)
        let algorithm = try SignatureVerifier.verify(
            try Self.signed(message, "sig-b24"), in: message, with: Self.eccP256)
        #expect(algorithm.name == "ecdsa-p256-sha256")
    }

    @Test("B.2.5: hmac-sha256, byte for byte")
    func hmac() throws {
        let message = Self.request([
            (
                "signature-input",
                #"sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret""#
            ),
            ("signature", "sig-b25=:pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=:")
        ])
        let chosen = try Self.signed(message, "sig-b25")
        #expect(
            try Self.base(message, "sig-b25") == """
                "date": Tue, 20 Apr 2021 02:07:55 GMT
                "@authority": example.com
                "content-type": application/json
                "@signature-params": ("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"
                """)
        try SignatureVerifier.verify(chosen, in: message, with: Self.sharedSecret)
        // Deterministic: signing the same base gives the RFC's bytes.
        let again = try MessageSigner.sign(
            message, chosen.parameters, label: "sig-b25", key: Self.sharedSecret,
            algorithm: SignatureAlgorithm(name: "hmac-sha256")!)
        #expect(again.signature == "sig-b25=:pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=:")
    }

    @Test("B.2.6: ed25519, signed again byte for byte")
    func ed25519() throws {
        let message = Self.request([
            (
                "signature-input",
                #"sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519""#
            ),
            (
                "signature",
                "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"
            )
        ])
        let chosen = try Self.signed(message, "sig-b26")
        #expect(
            try Self.base(message, "sig-b26") == """
                "date": Tue, 20 Apr 2021 02:07:55 GMT
                "@method": POST
                "@path": /foo
                "@authority": example.com
                "content-type": application/json
                "content-length": 18
                "@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"
                """)
        try SignatureVerifier.verify(chosen, in: message, with: Self.ed25519)
        let again = try MessageSigner.sign(
            message, chosen.parameters, label: "sig-b26", key: Self.ed25519Private,
            algorithm: SignatureAlgorithm(name: "ed25519")!)
        #expect(
            again.signature
                == "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:")
        #expect(again.input == message.lines("signature-input").first)
    }

    @Test("Each example's signature fails once a covered component changes")
    func tampered() throws {
        let input =
            #"sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519""#
        let signature =
            "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"
        let changed = SignedMessage(
            method: "PUT", scheme: "https", authority: "example.com", target: "/foo?param=Value&Pet=dog",
            fields: Self.request([("signature-input", input), ("signature", signature)]).fields)
        #expect(throws: MessageSignatureError(.badSignature, "the signature does not verify")) {
            try SignatureVerifier.verify(try Self.signed(changed, "sig-b26"), in: changed, with: Self.ed25519)
        }
    }

    @Test("The response's Content-Digest matches its content (RFC 9530)")
    func contentDigest() throws {
        let digest = try ContentDigest(field: Self.responseDigest)
        let right = digest.contexts()
        for c in right { c.update(Array(#"{"message": "good dog"}"#.utf8)) }
        #expect(digest.matches(right))
        let wrong = digest.contexts()
        for c in wrong { c.update(Array(#"{"message": "bad dog"}"#.utf8)) }
        #expect(!digest.matches(wrong))
    }
}
