public import JOSE
internal import RawStructuredFieldValues

/// Entry points for fuzzing what HTTP Message Signatures read from a client (the libFuzzer
/// target `SignatureFuzz` in `fuzz/`, and the corpus replay test): the `Signature-Input` and
/// `Signature` dictionaries with the signature base built over a message from the same bytes,
/// `Content-Digest`, and component identifiers as a config or a client writes them. They
/// return normally on every input; a failed `fuzzInvariant` is a finding.
public enum SignatureFuzzEntry {
    /// The first byte chooses the parser; the rest is its text.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let text = String(decoding: data.dropFirst(), as: UTF8.self)
        switch first % 3 {
        case 0: signatureBase(text)
        case 1: contentDigest(text)
        default: componentIdentifier(text)
        }
    }

    /// Line 1: `Signature-Input`; line 2: `Signature`; line 3: the request target; the rest:
    /// `name: value` fields. Every signature read builds its base over that message or is
    /// refused with a `MessageSignatureError`. A base has one line per covered component and
    /// ends with the `@signature-params` line, whose value parses again to the same bytes.
    static func signatureBase(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 2 else { return }
        var fields: [SignedMessage.Field] = []
        for line in lines.dropFirst(3) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append(
                SignedMessage.Field(
                    name: line[..<colon].lowercased(), value: String(line[line.index(after: colon)...])))
        }
        let target = lines.count > 2 && lines[2].hasPrefix("/") ? lines[2] : "/"
        let request = SignedMessage(
            method: "POST", scheme: "https", authority: "Example.com:443", target: target, fields: fields)
        let response = SignedMessage(status: 200, fields: fields, answering: request)
        let parsed: MessageSignatureFields
        do { parsed = try MessageSignatureFields(input: lines[0], signature: lines[1]) } catch is MessageSignatureError
        {
            return
        } catch {
            fuzzInvariant(false, "MessageSignatureFields threw \(error)")
            return
        }
        for signature in parsed.signatures {
            let params = signature.parameters
            let serialized = params.serialized
            var again = StructuredFieldValueParser(serialized)
            let reparsed = try? again.parseListFieldValue()
            fuzzInvariant(
                reparsed.flatMap { $0.first }.flatMap { try? SignatureParameters($0).serialized } == serialized,
                "the @signature-params value does not parse back to itself")
            for message in [request, response] {
                do {
                    let base = try SignatureBase.build(params, of: message)
                    let baseLines = base.split(separator: 0x0A, omittingEmptySubsequences: false)
                    fuzzInvariant(
                        baseLines.count == params.components.count + 1, "a base line count differs from its components")
                    fuzzInvariant(
                        Array(baseLines.last ?? []) == Array("\"@signature-params\": ".utf8) + serialized,
                        "the base does not end with its @signature-params line")
                } catch is MessageSignatureError {
                } catch {
                    fuzzInvariant(false, "SignatureBase threw \(error)")
                }
            }
        }
    }

    /// A field that parses names only digests of the right size; the gateway's own field for
    /// a digest parses back to it and matches the bytes it was made from.
    static func contentDigest(_ text: String) {
        if let digest = try? ContentDigest(field: text) {
            for (algorithm, bytes) in digest.expected {
                fuzzInvariant(bytes.count == algorithm.size, "a digest of the wrong size was accepted")
            }
        }
        let content = Array(text.utf8)
        guard let mine = try? ContentDigest(field: ContentDigest.field(for: content)) else {
            fuzzInvariant(false, "the gateway's own Content-Digest does not parse")
            return
        }
        let contexts = mine.contexts()
        for c in contexts { c.update(content) }
        fuzzInvariant(mine.matches(contexts), "the gateway's own Content-Digest does not match its content")
    }

    /// A component identifier that parses serializes to an item that parses back to the same
    /// identifier.
    static func componentIdentifier(_ text: String) {
        guard let component = try? ComponentIdentifier(config: text) else { return }
        var parser = StructuredFieldValueParser(Array(component.serialized.utf8))
        guard let item = try? parser.parseItemFieldValue() else {
            fuzzInvariant(false, "a component identifier serializes to no item")
            return
        }
        fuzzInvariant((try? ComponentIdentifier(item)) == component, "a component identifier does not round-trip")
    }
}
