import JOSE

/// An API key's text: `tgk_`, 32 random bytes in base62 (43 characters), and a CRC32 of
/// what precedes it in base62 (6 characters), as GitHub's tokens carry one. The prefix lets
/// secret scanners spot a leaked key; the check digits refuse a mistyped or truncated key
/// before any lookup, and tell such a key (`malformed`) from a well-formed one the set does
/// not hold (`unknown`).
///
/// The gateway keeps no key, only its digest (`APIKeyDigest`): the key is shown once, when
/// `tokengate api-keys create` makes it.
struct APIKey: Equatable {
    let text: String

    static let prefix = "tgk_"
    /// 62^43 > 2^256 > 62^42: every 32-byte value has a 43-digit form.
    static let randomDigits = 43
    /// 62^6 > 2^32.
    static let checkDigits = 6
    static let length = prefix.utf8.count + randomDigits + checkDigits

    /// Why a text is not a key, checked in this order.
    enum Malformed: Error, Equatable, CustomStringConvertible {
        case prefix, length, character, checkDigits

        var description: String {
            switch self {
            case .prefix: "it does not start with \(APIKey.prefix)"
            case .length: "it is not \(APIKey.length) characters long"
            case .character: "it has a character outside 0-9, A-Z, a-z"
            case .checkDigits: "its check digits do not match (a typo, or a truncated key)"
            }
        }
    }

    /// A new key from OpenSSL's CSPRNG.
    static func generate() -> APIKey {
        let body = prefix + Base62.encode(SecureRandom.bytes(32), digits: randomDigits)
        return APIKey(text: body + Base62.encode(CRC32.checksum(Array(body.utf8)), digits: checkDigits))
    }

    /// The key in `text`, or why it is none. Reads bytes: the text is the client's.
    static func parse(_ bytes: some Collection<UInt8>) -> Result<APIKey, Malformed> {
        let bytes = Array(bytes)
        let head = Array(prefix.utf8)
        guard bytes.starts(with: head) else { return .failure(.prefix) }
        guard bytes.count == length else { return .failure(.length) }
        let rest = bytes[head.count...]
        guard rest.allSatisfy(Base62.isDigit) else { return .failure(.character) }
        let body = bytes[..<(length - checkDigits)]
        let check = bytes[(length - checkDigits)...]
        guard let sent = Base62.decode(check), sent == UInt64(CRC32.checksum(Array(body))) else {
            return .failure(.checkDigits)
        }
        return .success(APIKey(text: String(decoding: bytes, as: UTF8.self)))
    }

    /// What the key file holds in its place.
    var digest: APIKeyDigest { APIKeyDigest(bytes: Digest.sha256.hash(utf8: text)) }
}

/// The SHA-256 of a key's whole text, written `sha256:` and 64 lowercase hex digits. The
/// table is keyed by it: a lookup hashes the presented key once, and compares digests, never
/// keys, so how long a compare takes says nothing about a key the set holds.
struct APIKeyDigest: Hashable, CustomStringConvertible {
    let bytes: [UInt8]

    init(bytes: [UInt8]) {
        precondition(bytes.count == 32, "a SHA-256 digest is 32 bytes")
        self.bytes = bytes
    }

    /// `sha256:` and 64 hex digits (either case); nil for anything else.
    init?(_ text: String) {
        let scheme = "sha256:"
        guard text.hasPrefix(scheme) else { return nil }
        let hex = Array(text.utf8.dropFirst(scheme.utf8.count))
        guard hex.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(hex[i]), let low = Self.nibble(hex[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        bytes = out
    }

    var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = Array("sha256:".utf8)
        for b in bytes { out += [digits[Int(b >> 4)], digits[Int(b & 0xF)]] }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Base62 with the digits `0-9A-Za-z`, big-endian, zero-padded to a fixed width.
enum Base62 {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    static func isDigit(_ c: UInt8) -> Bool { value(c) != nil }

    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 36
        default: nil
        }
    }

    /// The big-endian number in `bytes`, in exactly `digits` base62 digits (it must fit).
    static func encode(_ bytes: [UInt8], digits: Int) -> String {
        // Long division by 62, most significant byte first, once per digit.
        var number = bytes
        var out = [UInt8](repeating: alphabet[0], count: digits)
        for position in (0..<digits).reversed() {
            var remainder = 0
            for i in number.indices {
                let value = remainder << 8 | Int(number[i])
                number[i] = UInt8(value / 62)
                remainder = value % 62
            }
            out[position] = alphabet[remainder]
        }
        precondition(number.allSatisfy { $0 == 0 }, "Base62: \(bytes.count) bytes do not fit in \(digits) digits")
        return String(decoding: out, as: UTF8.self)
    }

    static func encode(_ value: UInt32, digits: Int) -> String {
        encode(
            [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)],
            digits: digits)
    }

    /// The value of at most 10 base62 digits; nil when one is not a digit.
    static func decode(_ text: some Collection<UInt8>) -> UInt64? {
        precondition(text.count <= 10, "Base62.decode: at most 10 digits fit a UInt64")
        var out: UInt64 = 0
        for c in text {
            guard let v = value(c) else { return nil }
            out = out * 62 + UInt64(v)
        }
        return out
    }
}

/// CRC-32 (ISO-HDLC: the polynomial 0x04C11DB7 reflected, as zlib and PNG compute it). A
/// check digit, not a secret: it catches typos, and proves nothing about who made the key.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
