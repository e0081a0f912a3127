/// base64url without padding (RFC 7515 §2, RFC 4648 §5), decoded strictly: no padding, no
/// whitespace, nothing outside the alphabet, no impossible length, and the unused low bits
/// of the last character must be zero (otherwise two texts decode to the same bytes, and a
/// signature could be "changed" without changing what it signs).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        // One contiguous copy, then a loop over raw bytes: generic iteration from another
        // module is not specialized and costs a call per byte.
        let array = Array(bytes)
        return array.withUnsafeBufferPointer { encode(buffer: $0) }
    }

    public static func encode(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        encode(buffer: input, alphabet: alphabet, padded: false)
    }

    /// `bytes` with another alphabet (standard base64's), padded or not.
    static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        bytes.withUnsafeBufferPointer { encode(buffer: $0, alphabet: alphabet, padded: padded) }
    }

    /// One pass over `input` with `alphabet` (base64url's, or standard base64's, RFC 4648
    /// §4), padded with `=` to a multiple of four when `padded`.
    static func encode(buffer input: UnsafeBufferPointer<UInt8>, alphabet: [UInt8], padded: Bool) -> String {
        let n = input.count
        let outCount = padded ? (n + 2) / 3 * 4 : (n * 4 + 2) / 3
        return alphabet.withUnsafeBufferPointer { table in
            String(unsafeUninitializedCapacity: outCount) { out in
                var i = 0
                var o = 0
                while i + 3 <= n {
                    let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                    out[o] = table[Int(v >> 18)]
                    out[o + 1] = table[Int(v >> 12 & 63)]
                    out[o + 2] = table[Int(v >> 6 & 63)]
                    out[o + 3] = table[Int(v & 63)]
                    i += 3
                    o += 4
                }
                if n - i == 1 {
                    let v = UInt32(input[i]) << 16
                    out[o] = table[Int(v >> 18)]
                    out[o + 1] = table[Int(v >> 12 & 63)]
                    o += 2
                } else if n - i == 2 {
                    let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                    out[o] = table[Int(v >> 18)]
                    out[o + 1] = table[Int(v >> 12 & 63)]
                    out[o + 2] = table[Int(v >> 6 & 63)]
                    o += 3
                }
                while padded && o % 4 != 0 {
                    out[o] = UInt8(ascii: "=")
                    o += 1
                }
                return o
            }
        }
    }

    public static func encode(_ text: String) -> String { encode(Array(text.utf8)) }

    /// nil unless the bytes are canonical unpadded base64url.
    public static func decode(ascii bytes: [UInt8]) -> [UInt8]? {
        bytes.withUnsafeBufferPointer { decode(bytes: $0) }
    }

    /// nil unless `text` is canonical unpadded base64url.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var copy = String(text)
        return copy.withUTF8 { decode(bytes: $0) }
    }

    /// The four-character groups' table: for each position in a group, each byte's 6-bit
    /// value already shifted to its place in the group's 24 bits (`quads[256 * k + byte]`),
    /// or `invalidQuad` for a byte outside the alphabet. A group decodes with four look-ups
    /// and three ORs; any invalid byte leaves a bit above the 24.
    private static let quads: [UInt32] = (0..<4).flatMap { k in
        reverse.map { v in v == 0xff ? invalidQuad : UInt32(v) << (6 * (3 - UInt32(k))) }
    }
    private static let invalidQuad: UInt32 = 1 << 24

    public static func decode(bytes input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let n = input.count
        let rest = n % 4
        if rest == 1 { return nil }
        let count = n / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        // Not through `unsafeUninitializedCapacity`: at capacity 0 it stores the count into the
        // runtime's shared empty-array storage, a write two threads can make at once.
        if count == 0 { return [] }
        var valid = true
        // One pass into an uninitialized buffer of the exact size, the tables borrowed once:
        // this runs over every token's payload and signature on the request path.
        let out = quads.withUnsafeBufferPointer { quads in
            reverse.withUnsafeBufferPointer { table in
                [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                    var i = 0
                    var o = 0
                    while i + 4 <= n {
                        let v =
                            quads[Int(input[i])] | quads[256 + Int(input[i + 1])] | quads[512 + Int(input[i + 2])]
                            | quads[768 + Int(input[i + 3])]
                        if v >= invalidQuad {
                            valid = false
                            initialized = 0
                            return
                        }
                        out[o] = UInt8(truncatingIfNeeded: v >> 16)
                        out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                        out[o + 2] = UInt8(truncatingIfNeeded: v)
                        i += 4
                        o += 3
                    }
                    if rest == 2 {
                        let a = table[Int(input[i])]
                        let b = table[Int(input[i + 1])]
                        if (a | b) == 0xff || b & 0x0f != 0 {
                            valid = false
                            initialized = 0
                            return
                        }
                        out[o] = a << 2 | b >> 4
                    } else if rest == 3 {
                        let a = table[Int(input[i])]
                        let b = table[Int(input[i + 1])]
                        let c = table[Int(input[i + 2])]
                        if (a | b | c) == 0xff || c & 0x03 != 0 {
                            valid = false
                            initialized = 0
                            return
                        }
                        out[o] = a << 2 | b >> 4
                        out[o + 1] = b << 4 | c >> 2
                    }
                    initialized = count
                }
            }
        }
        return valid ? out : nil
    }
}
