internal import JOSE
internal import RawStructuredFieldValues

/// The signature base (RFC 9421 §2.5): one line per covered component, `identifier: value`,
/// then the `@signature-params` line, with no newline after it. Any component the message
/// cannot give, or gives with a newline in it, fails the whole base.
public enum SignatureBase {
    /// `serialized`: the parameters already serialized (a signer writes them into
    /// `Signature-Input` too).
    public static func build(
        _ parameters: SignatureParameters, of message: SignedMessage, serialized: [UInt8]? = nil
    ) throws -> [UInt8] {
        var base: [UInt8] = []
        base.reserveCapacity(512)
        for component in parameters.components {
            let value = try Self.value(of: component, in: message)
            // §2.5 step 2.4: a value with a newline cannot be in a base.
            guard !value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else {
                throw MessageSignatureError(.componentMissing, "\(component) has a line break in its value")
            }
            base += component.serialized.utf8
            base += ": ".utf8
            base += value.utf8
            base.append(0x0A)
        }
        base += "\"@signature-params\": ".utf8
        base += serialized ?? parameters.serialized
        return base
    }

    /// The component's value in `message`, or in the request it answers when it says `;req`.
    static func value(of component: ComponentIdentifier, in message: SignedMessage) throws -> String {
        var source = message
        if component.has("req") {
            guard message.isResponse, let request = message.request else {
                throw MessageSignatureError(.componentMissing, "\(component) names a request this message lacks")
            }
            source = request
        }
        if component.has("tr") {
            throw MessageSignatureError(.unsupportedComponent, "trailer fields are not signed here (\(component))")
        }
        if component.isDerived { return try DerivedComponent.value(component, of: source) }
        return try fieldValue(component, in: source)
    }

    /// A field's value (§2.1): every line trimmed and joined with ", "; or re-serialized
    /// (`;sf`), one dictionary member (`;key`), or each line as a byte sequence (`;bs`).
    static func fieldValue(_ component: ComponentIdentifier, in message: SignedMessage) throws -> String {
        let lines = message.lines(component.name)
        guard !lines.isEmpty else {
            throw MessageSignatureError(.componentMissing, "the message has no \(component.name) field")
        }
        if component.has("bs") {
            return lines.map { ":" + Base64.standard(Array(trimmed($0).utf8)) + ":" }.joined(separator: ", ")
        }
        let combined = lines.map { trimmed($0) }.joined(separator: ", ")
        if let key = component.string("key") {
            return try StructuredFieldForm.member(key, of: combined, field: component.name)
        }
        if component.has("sf") { return try StructuredFieldForm.reserialized(combined, field: component.name) }
        return combined
    }

    /// Without leading and trailing SP and HTAB (RFC 9110 §5.5's OWS).
    static func trimmed(_ s: String) -> Substring {
        let bytes = s.utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })!
        return s[first...last]
    }
}

/// Fields read as Structured Fields for `;sf` and `;key` (RFC 9421 §2.1.1–2.1.2). A field is
/// parsed as the type its definition gives it; a field whose type is not known here cannot be
/// re-serialized, so the base fails rather than guess.
enum StructuredFieldForm {
    enum Kind { case dictionary, list, item }

    static let known: [String: Kind] = [
        "content-digest": .dictionary, "repr-digest": .dictionary, "want-content-digest": .dictionary,
        "want-repr-digest": .dictionary, "signature": .dictionary, "signature-input": .dictionary,
        "accept-signature": .dictionary, "priority": .dictionary, "cache-status": .list, "proxy-status": .list,
        "ratelimit": .list, "ratelimit-policy": .list, "accept-ch": .list, "example-dict": .dictionary
    ]

    static func kind(_ field: String) throws -> Kind {
        guard let kind = known[field] else {
            throw MessageSignatureError(.unsupportedComponent, "\(field) is not a Structured Field known here")
        }
        return kind
    }

    static func reserialized(_ value: String, field: String) throws -> String {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        var serializer = StructuredFieldValueSerializer()
        do {
            switch try kind(field) {
            case .dictionary:
                return String(
                    decoding: try serializer.writeDictionaryFieldValue(parser.parseDictionaryFieldValue()),
                    as: UTF8.self)
            case .list:
                return String(decoding: try serializer.writeListFieldValue(parser.parseListFieldValue()), as: UTF8.self)
            case .item:
                return String(decoding: try serializer.writeItemFieldValue(parser.parseItemFieldValue()), as: UTF8.self)
            }
        } catch let error as MessageSignatureError {
            throw error
        } catch {
            throw MessageSignatureError(.componentMissing, "\(field) is not a valid Structured Field")
        }
    }

    /// §2.1.2: the member's value serialized alone (an item with its parameters, or an inner
    /// list with its own); the base fails when the member is absent.
    static func member(_ key: String, of value: String, field: String) throws -> String {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        let dictionary: OrderedMap<String, ItemOrInnerList>
        do { dictionary = try parser.parseDictionaryFieldValue() } catch {
            throw MessageSignatureError(.componentMissing, "\(field) is not a Structured Field dictionary")
        }
        guard let member = dictionary[key] else {
            throw MessageSignatureError(.componentMissing, "\(field) has no member \(key)")
        }
        var serializer = StructuredFieldValueSerializer()
        let bytes: [UInt8]?
        switch member {
        case .item(let item): bytes = try? serializer.writeItemFieldValue(item)
        case .innerList: bytes = try? serializer.writeListFieldValue([member])
        }
        guard let bytes else {
            throw MessageSignatureError(.componentMissing, "\(field);key=\(key) cannot be serialized")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
