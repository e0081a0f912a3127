internal import JOSE
public import RawStructuredFieldValues

/// One signature's `Signature-Input` member (RFC 9421 §2.3, §4.1): the covered components, in
/// order, and the signature parameters. The `@signature-params` line of the base is this
/// value serialized again, so parameters this verifier does not know are kept in order.
public struct SignatureParameters: Sendable {
    public let components: [ComponentIdentifier]
    public let created: Int64?
    public let expires: Int64?
    public let nonce: String?
    public let alg: String?
    public let keyid: String?
    public let tag: String?
    let innerList: InnerList

    /// Reads a member; each known parameter must have §2.3's type, each component be unique.
    public init(_ member: ItemOrInnerList) throws {
        guard case .innerList(let list) = member else {
            throw MessageSignatureError(.malformed, "a Signature-Input member is an inner list")
        }
        var components: [ComponentIdentifier] = []
        for item in list.bareInnerList {
            let component = try ComponentIdentifier(item)
            // §2.5: a component listed twice fails; `@signature-params` is never listed (§2.3).
            guard component.name != "@signature-params" else {
                throw MessageSignatureError(.malformed, "@signature-params cannot be covered")
            }
            guard !components.contains(component) else {
                throw MessageSignatureError(.malformed, "component \(component) is listed twice")
            }
            components.append(component)
        }
        var created: Int64?
        var expires: Int64?
        var nonce: String?
        var alg: String?
        var keyid: String?
        var tag: String?
        for (key, value) in list.rfc9651Parameters {
            switch (key, value) {
            case ("created", .integer(let n)): created = n
            case ("expires", .integer(let n)): expires = n
            case ("nonce", .string(let s)): nonce = s
            case ("alg", .string(let s)): alg = s
            case ("keyid", .string(let s)): keyid = s
            case ("tag", .string(let s)): tag = s
            case ("created", _), ("expires", _), ("nonce", _), ("alg", _), ("keyid", _), ("tag", _):
                throw MessageSignatureError(.malformed, "signature parameter \(key) has the wrong type")
            default: continue
            }
        }
        self.components = components
        self.created = created
        self.expires = expires
        self.nonce = nonce
        self.alg = alg
        self.keyid = keyid
        self.tag = tag
        innerList = list
    }

    /// Parameters for a signature this side makes, in §2.3's order.
    public init(
        components: [ComponentIdentifier], created: Int64, expires: Int64? = nil, nonce: String? = nil,
        alg: String? = nil, keyid: String?, tag: String?
    ) {
        var inner = BareInnerList()
        for c in components { inner.append(c.item) }
        var params = OrderedMap<String, RFC9651BareItem>()
        params["created"] = .integer(created)
        if let expires { params["expires"] = .integer(expires) }
        if let nonce { params["nonce"] = .string(nonce) }
        if let alg { params["alg"] = .string(alg) }
        if let keyid { params["keyid"] = .string(keyid) }
        if let tag { params["tag"] = .string(tag) }
        self.components = components
        self.created = created
        self.expires = expires
        self.nonce = nonce
        self.alg = alg
        self.keyid = keyid
        self.tag = tag
        innerList = InnerList(bareInnerList: inner, parameters: params)
    }

    /// The member's value serialized (§2.3): the `@signature-params` line's value, and what a
    /// `Signature-Input` member says.
    ///
    /// Built from the components' kept serializations, with integer and string parameters (all
    /// that §2.3 defines) written here and any other by the Structured Fields serializer. A
    /// value the format cannot carry (built, never parsed) gives what the serializer's refusal
    /// gave before: an empty value.
    public var serialized: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + components.count * 24)
        out.append(UInt8(ascii: "("))
        for (i, component) in components.enumerated() {
            if i > 0 { out.append(UInt8(ascii: " ")) }
            out += component.serialized.utf8
        }
        out.append(UInt8(ascii: ")"))
        for (key, value) in innerList.rfc9651Parameters {
            out.append(UInt8(ascii: ";"))
            out += key.utf8
            switch value {
            case .bool(true): continue  // §4.1.1.2: a true boolean is the key alone
            case .integer(let n) where n > -1_000_000_000_000_000 && n < 1_000_000_000_000_000:  // §3.3.1
                out.append(UInt8(ascii: "="))
                out += String(n).utf8
            case .string(let s) where s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }):
                out.append(UInt8(ascii: "="))
                SFString.appendQuoted(s, to: &out)
            default:
                var serializer = StructuredFieldValueSerializer()
                guard let bare = try? serializer.writeItemFieldValue(Item(bareItem: value, parameters: OrderedMap()))
                else { return [] }
                out.append(UInt8(ascii: "="))
                out += bare
            }
        }
        return out
    }

    public func covers(_ component: ComponentIdentifier) -> Bool { components.contains(component) }
}

/// The signatures a message carries: `Signature-Input` and `Signature` read as the
/// dictionaries they are (RFC 9421 §4.1, §4.2), matched by label.
public struct MessageSignatureFields: Sendable {
    public struct Labeled: Sendable {
        public let label: String
        public let parameters: SignatureParameters
        public let signature: [UInt8]
    }

    /// In the order `Signature-Input` lists them.
    public let signatures: [Labeled]

    /// `input` and `signature`: each field's lines combined (RFC 9110 §5.3), nil if absent.
    /// A label in one field and not the other is refused, as is a member of the wrong type.
    public init(input: String?, signature: String?) throws {
        guard let input, let signature else {
            throw MessageSignatureError(.missing, "the request has no Signature-Input and Signature")
        }
        let inputs = try Self.dictionary(input, "Signature-Input")
        let values = try Self.dictionary(signature, "Signature")
        var out: [Labeled] = []
        for (label, member) in inputs {
            guard let value = values[label] else {
                throw MessageSignatureError(.missing, "Signature has no member \(label)")
            }
            guard case .item(let item) = value, case .undecodedByteSequence(let b64) = item.rfc9651BareItem,
                let bytes = Base64.decodeStandard(b64)
            else {
                throw MessageSignatureError(.malformed, "Signature member \(label) is not a byte sequence")
            }
            out.append(Labeled(label: label, parameters: try SignatureParameters(member), signature: bytes))
        }
        guard !out.isEmpty else { throw MessageSignatureError(.missing, "Signature-Input is empty") }
        signatures = out
    }

    static func dictionary(_ text: String, _ field: String) throws -> OrderedMap<String, ItemOrInnerList> {
        var parser = StructuredFieldValueParser(Array(text.utf8))
        do { return try parser.parseDictionaryFieldValue() } catch {
            throw MessageSignatureError(.malformed, "\(field) is not a Structured Field dictionary")
        }
    }
}
