public import JOSE
internal import RawStructuredFieldValues

/// `Content-Digest` (RFC 9530 §2): a dictionary of algorithm → byte sequence over the
/// message's content. `sha-256` and `sha-512` are the algorithms the registry marks
/// "Active" (§7.2); the others in it (`md5`, `sha`, …) are deprecated and ignored, so a field
/// that names none of the two is refused.
public struct ContentDigest: Sendable {
    public static let algorithms: [(String, Digest)] = [("sha-256", .sha256), ("sha-512", .sha512)]

    /// The digests the field gives for the algorithms known here.
    public let expected: [(Digest, [UInt8])]

    public init(field: String) throws {
        var parser = StructuredFieldValueParser(Array(field.utf8))
        let dictionary: OrderedMap<String, ItemOrInnerList>
        do { dictionary = try parser.parseDictionaryFieldValue() } catch {
            throw MessageSignatureError(.digestMismatch, "Content-Digest is not a Structured Field dictionary")
        }
        var expected: [(Digest, [UInt8])] = []
        for (name, digest) in Self.algorithms {
            guard let member = dictionary[name] else { continue }
            guard case .item(let item) = member, case .undecodedByteSequence(let b64) = item.rfc9651BareItem,
                let bytes = Base64.decodeStandard(b64), bytes.count == digest.size
            else {
                throw MessageSignatureError(
                    .digestMismatch, "Content-Digest's \(name) is not a \(digest.size)-byte sequence")
            }
            expected.append((digest, bytes))
        }
        guard !expected.isEmpty else {
            throw MessageSignatureError(.digestMismatch, "Content-Digest names neither sha-256 nor sha-512")
        }
        self.expected = expected
    }

    /// Contexts to feed the content to, one per algorithm the field names.
    public func contexts() -> [DigestContext] { expected.map { DigestContext($0.0) } }

    /// Whether every digest the field gives matches what `contexts` computed.
    public func matches(_ contexts: [DigestContext]) -> Bool {
        guard contexts.count == expected.count else { return false }
        var ok = true
        for (context, (_, bytes)) in zip(contexts, expected) where !ConstantTime.equals(context.finish(), bytes) {
            ok = false
        }
        return ok
    }

    /// The field for `content` (sha-256), as a sender writes it.
    public static func field(for content: [UInt8]) -> String {
        "sha-256=:" + Base64.standard(Digest.sha256.hash(content)) + ":"
    }

    public static func field(sha256 digest: [UInt8]) -> String { "sha-256=:" + Base64.standard(digest) + ":" }
}
