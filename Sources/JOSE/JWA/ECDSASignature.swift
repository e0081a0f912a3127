internal import COpenSSL

/// JWS carries ECDSA signatures as fixed-size r‖s (RFC 7518 §3.4); OpenSSL wants DER.
enum ECDSASignature {
    /// The DER `ECDSA-Sig-Value` (RFC 3279 §2.2.3: SEQUENCE { r INTEGER, s INTEGER }) for a
    /// raw r‖s, byte for byte what `i2d_ECDSA_SIG` writes for the same numbers: each
    /// INTEGER minimal (leading zero octets dropped, one 0x00 put back before a high bit so
    /// it stays positive, zero as one 0x00 octet; X.690 §8.3.2), lengths in short form
    /// below 128 and long form above (P-521's can reach 138). Written directly: going
    /// through two BIGNUMs, an ECDSA_SIG and i2d cost about 9,000 instructions a
    /// verification. Encoding only: OpenSSL parses it again and does all the arithmetic.
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        let half = raw.count / 2
        guard raw.count % 2 == 0, half > 0, half <= 66 else { return nil }
        return raw.withUnsafeBufferPointer { raw in
            let r = UnsafeBufferPointer(rebasing: raw[..<half])
            let s = UnsafeBufferPointer(rebasing: raw[half...])
            let content = integerSize(r) + integerSize(s)
            var out: [UInt8] = []
            out.reserveCapacity(content + 3)
            out.append(0x30)
            appendLength(content, to: &out)
            appendInteger(r, to: &out)
            appendInteger(s, to: &out)
            return out
        }
    }

    /// The magnitude's octets without leading zeros, and whether a 0x00 must precede them.
    private static func minimal(_ n: UnsafeBufferPointer<UInt8>) -> (digits: UnsafeBufferPointer<UInt8>, pad: Bool) {
        var start = 0
        while start < n.count && n[start] == 0 { start += 1 }
        let digits = UnsafeBufferPointer(rebasing: n[start...])
        return (digits, digits.isEmpty || digits[0] >= 0x80)
    }

    private static func integerSize(_ n: UnsafeBufferPointer<UInt8>) -> Int {
        let (digits, pad) = minimal(n)
        let length = digits.count + (pad ? 1 : 0)
        return 1 + (length < 128 ? 1 : 2) + length
    }

    /// Short or one-byte long form only: an integer here is at most 67 bytes (P-521's 66
    /// and a pad byte), a SEQUENCE of two at most 140 (`fromRaw` refuses larger halves).
    private static func appendLength(_ length: Int, to out: inout [UInt8]) {
        precondition(length < 256)
        if length >= 128 { out.append(0x81) }
        out.append(UInt8(length))
    }

    private static func appendInteger(_ n: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let (digits, pad) = minimal(n)
        out.append(0x02)
        appendLength(digits.count + (pad ? 1 : 0), to: &out)
        if pad { out.append(0x00) }
        out.append(contentsOf: digits)
    }

    static func raw(fromDER der: [UInt8], size: Int) -> [UInt8]? {
        var p: UnsafePointer<UInt8>? = nil
        return der.withUnsafeBufferPointer { buf -> [UInt8]? in
            p = buf.baseAddress
            guard let sig = d2i_ECDSA_SIG(nil, &p, buf.count) else { return nil }
            defer { ECDSA_SIG_free(sig) }
            var out = [UInt8](repeating: 0, count: size * 2)
            guard let r = ECDSA_SIG_get0_r(sig), let s = ECDSA_SIG_get0_s(sig),
                BN_bn2binpad(r, &out, Int32(size)) == Int32(size)
            else { return nil }
            let ok = out.withUnsafeMutableBufferPointer { BN_bn2binpad(s, $0.baseAddress! + size, Int32(size)) }
            return ok == Int32(size) ? out : nil
        }
    }
}
