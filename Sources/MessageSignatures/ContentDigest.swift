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

    /// Every `Content-Digest` line the message carries, combined as a signature's base
    /// combines them (RFC 9421 §2.1: each trimmed, joined with ", "): what is checked is what
    /// a signature covering `content-digest` vouches for, not only the first line.
    public init(lines: [String]) throws {
        try self.init(field: lines.map { SignatureBase.trimmed($0) }.joined(separator: ", "))
    }

    public init(field: String) throws {
        var parser = StructuredFieldValueParser(Array(field.utf8))
        let dictionary: OrderedMap<String, ItemOrInnerList>
        do { dictionary = try parser.parseDictionaryFieldValue() } catch {
            throw MessageSignatureError(.digestMismatch, "Content-Digest is not a Structured Field dictionary")
        }
        // RFC 9651 §4.2.2 keeps the last of a key given twice; a reader that keeps the first
        // would check another digest. Two of one algorithm are refused instead.
        guard Self.memberCount(field) == dictionary.count else {
            throw MessageSignatureError(.digestMismatch, "Content-Digest names an algorithm twice")
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

    /// The members of a dictionary that parsed: its commas outside strings plus one (byte
    /// sequences, tokens, numbers and parameters hold no comma; only an sf-string may).
    static func memberCount(_ field: String) -> Int {
        var count = 1
        var inString = false
        var escaped = false
        for b in field.utf8 {
            if inString {
                if escaped {
                    escaped = false
                } else if b == UInt8(ascii: "\\") {
                    escaped = true
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if b == UInt8(ascii: "\"") {
                inString = true
            } else if b == UInt8(ascii: ",") {
                count += 1
            }
        }
        return count
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
