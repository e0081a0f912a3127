// Base64URL as it was before the four-table decoder, kept (renamed, one guard added) as the
// reference that `Base64URLDifferentialTests` compares against.

/// base64url without padding (RFC 7515 §2, RFC 4648 §5), decoded strictly: no padding, no
/// whitespace, nothing outside the alphabet, no impossible length, and the unused low bits
/// of the last character must be zero (otherwise two texts decode to the same bytes, and a
/// signature could be "changed" without changing what it signs).
enum RefBase64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        // One contiguous copy, then a loop over raw bytes: generic iteration from another
        // module is not specialized and costs a call per byte.
        let array = Array(bytes)
        return array.withUnsafeBufferPointer { encode(buffer: $0) }
    }

    static func encode(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        let n = input.count
        let outCount = (n * 4 + 2) / 3
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
                return o
            }
        }
    }

    static func encode(_ text: String) -> String { encode(Array(text.utf8)) }

    /// nil unless `text` is canonical unpadded base64url.
    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var copy = String(text)
        return copy.withUTF8 { decode(bytes: $0) }
    }

    static func decode(bytes input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let n = input.count
        let rest = n % 4
        if rest == 1 { return nil }
        let count = n / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        // The one change from the old decoder: at capacity 0, `unsafeUninitializedCapacity`
        // stores into the runtime's shared empty-array storage, which ThreadSanitizer reports
        // when two tests do it at once. The answer is the same empty array.
        if count == 0 { return [] }
        var valid = true
        // One pass into an uninitialized buffer of the exact size, the table borrowed once:
        // this runs over every token's payload and signature on the request path.
        let out = reverse.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                var i = 0
                var o = 0
                while i + 4 <= n {
                    let a = table[Int(input[i])]
                    let b = table[Int(input[i + 1])]
                    let c = table[Int(input[i + 2])]
                    let d = table[Int(input[i + 3])]
                    if (a | b | c | d) == 0xff {
                        valid = false
                        initialized = 0
                        return
                    }
                    out[o] = a << 2 | b >> 4
                    out[o + 1] = b << 4 | c >> 2
                    out[o + 2] = c << 6 | d
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
        return valid ? out : nil
    }
}
