import RawStructuredFieldValues
import Testing

@testable import MessageSignatures

/// RFC 9421 §2's component rules, each from the RFC's own examples where it has one, and the
/// refusals of §2.5 from the side of a sender who gets them wrong.
@Suite("RFC 9421 §2: component values and the signature base's refusals")
struct ComponentTests {
    static func message(target: String = "/path?param=value", _ fields: [(String, String)] = []) -> SignedMessage {
        SignedMessage(
            method: "GET", scheme: "https", authority: "WWW.Example.com:443", target: target,
            fields: fields.map { SignedMessage.Field(name: $0.0, value: $0.1) })
    }

    static func value(_ component: String, _ message: SignedMessage) throws -> String {
        try SignatureBase.value(of: try ComponentIdentifier(config: component), in: message)
    }

    static func params(_ member: String) throws -> SignatureParameters {
        let fields = try MessageSignatureFields(input: "sig=" + member, signature: "sig=:AA==:")
        return fields.signatures[0].parameters
    }

    @Test("§2.1: field lines trimmed and joined; §2.1.1 ;sf, §2.1.2 ;key, §2.1.3 ;bs")
    func fields() throws {
        let m = Self.message([
            ("example-dict", " a=1,    b=2;x=1;y=2,   c=(a   b   c)  "), ("x-empty-header", ""),
            ("x-ows-header", "   Leading and trailing whitespace.   "), ("cache-control", "max-age=60"),
            ("cache-control", "   must-revalidate"), ("example-header", "value, with, lots"),
            ("example-header", "of, commas")
        ])
        #expect(try Self.value("cache-control", m) == "max-age=60, must-revalidate")
        #expect(try Self.value("x-empty-header", m) == "")
        #expect(try Self.value("x-ows-header", m) == "Leading and trailing whitespace.")
        #expect(try Self.value("example-dict", m) == "a=1,    b=2;x=1;y=2,   c=(a   b   c)")
        #expect(try Self.value(#""example-dict";sf"#, m) == "a=1, b=2;x=1;y=2, c=(a b c)")
        #expect(try Self.value(#""example-dict";key="a""#, m) == "1")
        #expect(try Self.value(#""example-dict";key="b""#, m) == "2;x=1;y=2")
        #expect(try Self.value(#""example-dict";key="c""#, m) == "(a b c)")
        #expect(try Self.value(#""example-header";bs"#, m) == ":dmFsdWUsIHdpdGgsIGxvdHM=:, :b2YsIGNvbW1hcw==:")
    }

    @Test("§2.2: the derived components of a request")
    func derived() throws {
        let m = Self.message(target: "/path?param=value&foo=bar&baz=batman&qux=")
        #expect(try Self.value("@method", m) == "GET")
        #expect(try Self.value("@authority", m) == "www.example.com")
        #expect(try Self.value("@scheme", m) == "https")
        #expect(try Self.value("@target-uri", m) == "https://www.example.com/path?param=value&foo=bar&baz=batman&qux=")
        #expect(try Self.value("@request-target", m) == "/path?param=value&foo=bar&baz=batman&qux=")
        #expect(try Self.value("@path", m) == "/path")
        #expect(try Self.value("@query", m) == "?param=value&foo=bar&baz=batman&qux=")
        #expect(try Self.value("@query", Self.message(target: "/path")) == "?")
        #expect(try Self.value(#""@query-param";name="baz""#, m) == "batman")
        #expect(try Self.value(#""@query-param";name="qux""#, m) == "")
    }

    @Test("§2.2.8: query parameters decoded as a form and encoded again")
    func queryParameters() throws {
        let m = Self.message(
            target:
                "/parameters?var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something")
        #expect(try Self.value(#""@query-param";name="var""#, m) == "this%20is%20a%20big%0Avalue")
        #expect(try Self.value(#""@query-param";name="bar""#, m) == "with%20plus%20whitespace")
        #expect(try Self.value(#""@query-param";name="fa%C3%A7ade%22%3A%20""#, m) == "something")
        // A parameter named twice cannot be signed alone; one never named fails too.
        let twice = Self.message(target: "/p?a=1&a=2")
        #expect(throws: MessageSignatureError.self) { try Self.value(#""@query-param";name="a""#, twice) }
        #expect(throws: MessageSignatureError.self) { try Self.value(#""@query-param";name="b""#, twice) }
    }

    @Test("§2.2.9 and §2.4: @status and ;req belong to a response")
    func responses() throws {
        let request = Self.message([("authorization", "Bearer x")])
        let response = SignedMessage(
            status: 503, fields: [SignedMessage.Field(name: "content-type", value: "text/plain")], answering: request)
        #expect(try Self.value("@status", response) == "503")
        #expect(try Self.value(#""authorization";req"#, response) == "Bearer x")
        #expect(try Self.value(#""@method";req"#, response) == "GET")
        #expect(throws: MessageSignatureError.self) { try Self.value("@method", response) }
        #expect(throws: MessageSignatureError.self) { try Self.value("@status", request) }
        #expect(throws: MessageSignatureError.self) { try Self.value(#""authorization";req"#, request) }
    }

    @Test("A component the message lacks, or cannot give, fails the base")
    func missing() throws {
        let m = Self.message([("x-multi", "a"), ("x-not-sf", "((("), ("x-unknown", "a=1")])
        #expect(throws: MessageSignatureError.self) { try Self.value("authorization", m) }
        #expect(throws: MessageSignatureError.self) { try Self.value(#""x-unknown";sf"#, m) }
        #expect(throws: MessageSignatureError.self) { try Self.value(#""example-dict";key="a""#, m) }
        #expect(throws: MessageSignatureError.self) { try Self.value(#""x-multi";tr"#, m) }
        #expect(throws: MessageSignatureError.self) { try Self.value("@nonsense", m) }
    }

    @Test("Malformed Signature-Input members are refused before any base is built")
    func malformedInput() throws {
        let bad = [
            #"("@method" "@method");created=1"#,  // listed twice
            #"("@signature-params");created=1"#,  // never covered
            #"("Content-Type");created=1"#,  // not lowercase
            #"("@method";bogus);created=1"#,  // unknown parameter
            #"("x";sf;bs);created=1"#,  // bs with sf
            #"("@query-param");created=1"#,  // no name
            #"("@method";name="a");created=1"#,  // name elsewhere
            #"("@method";sf);created=1"#,  // field parameter on a derived component
            #"("@method");created="yesterday""#,  // mistyped
            #"("@method");keyid=4"#,
            #"(method);created=1"#,  // a token, not a string
            #"("foo bar");created=1"#,  // not a field name
            #"("@");created=1"#,
            "(\"\u{02}@method\");created=1"
        ]
        for member in bad {
            #expect(throws: MessageSignatureError.self, "\(member)") { try Self.params(member) }
        }
        #expect(throws: MessageSignatureError(.missing, "the request has no Signature-Input and Signature")) {
            try MessageSignatureFields(input: nil, signature: "sig=:AA==:")
        }
        #expect(throws: MessageSignatureError(.missing, "Signature has no member sig")) {
            try MessageSignatureFields(input: #"sig=("@method");created=1"#, signature: "other=:AA==:")
        }
        #expect(throws: MessageSignatureError.self) {
            try MessageSignatureFields(input: #"sig=("@method");created=1"#, signature: "sig=\"AA==\"")
        }
        #expect(throws: MessageSignatureError.self) {
            try MessageSignatureFields(input: "sig=(((", signature: "sig=:AA==:")
        }
    }

    @Test("A config's component that is no field name is refused (SignatureFuzz's first finding)")
    func configNames() {
        for text in ["\u{02}@method\";bogus", "foo bar", "a\"b", "", "@", "caf\u{e9}"] {
            #expect(throws: MessageSignatureError.self, "\(text)") { try ComponentIdentifier(config: text) }
        }
    }

    @Test("Unknown signature parameters are kept in the base, in order")
    func unknownParameters() throws {
        let p = try Self.params(#"("@method");created=1;app="x";keyid="k""#)
        #expect(String(decoding: p.serialized, as: UTF8.self) == #"("@method");created=1;app="x";keyid="k""#)
        #expect(p.keyid == "k")
        #expect(p.created == 1)
    }

    @Test("@signature-params is what the Structured Fields serializer writes, for every parameter type")
    func parametersSerialization() throws {
        let members = [
            #"("@method" "@path");created=1732841234;keyid="bench-client""#,
            #"("@method");created=-1;expires=999999999999999;nonce="a\"b\\c";tag="t""#,
            #"("content-digest";sf "example-dict";key="a" "x";bs "@query-param";name="id");created=1"#,
            #"("@status" "@method";req "@authority";req);created=1;alg="ed25519""#,
            #"("@method");created=1;app;off=?0;d=1.5;t=tok/en;b=:AQID:;z="""#,
            #"();created=1"#
        ]
        for member in members {
            let p = try Self.params(member)
            var serializer = StructuredFieldValueSerializer()
            let library = try serializer.writeListFieldValue([.innerList(p.innerList)])
            #expect(String(decoding: p.serialized, as: UTF8.self) == String(decoding: library, as: UTF8.self))
        }
        // A value this side builds that the format cannot carry (a byte outside printable
        // ASCII, an integer of 16 digits) is no value at all, as the library says.
        let built = SignatureParameters(
            components: [try ComponentIdentifier("@method")], created: 1, keyid: "caf\u{e9}", tag: nil)
        let tooLarge = SignatureParameters(
            components: [try ComponentIdentifier("@method")], created: 1_000_000_000_000_000, keyid: "k", tag: nil)
        for p in [built, tooLarge] {
            var serializer = StructuredFieldValueSerializer()
            #expect(throws: (any Error).self) { try serializer.writeListFieldValue([.innerList(p.innerList)]) }
            #expect(p.serialized.isEmpty)
        }
    }
}
