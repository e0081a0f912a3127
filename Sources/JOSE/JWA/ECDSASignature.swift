internal import COpenSSL

/// JWS carries ECDSA signatures as fixed-size r‖s (RFC 7518 §3.4); OpenSSL wants DER.
enum ECDSASignature {
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        let half = raw.count / 2
        guard raw.count % 2 == 0, half > 0,
            let sig = ECDSA_SIG_new()
        else { return nil }
        defer { ECDSA_SIG_free(sig) }
        guard let r = BN_bin2bn(raw, Int32(half), nil) else { return nil }
        guard let s = raw.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + half, Int32(half), nil) }) else {
            BN_free(r)
            return nil
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let len = i2d_ECDSA_SIG(sig, &out)
        guard len > 0, let out else { return nil }
        defer { CRYPTO_free(out, #file, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(len)))
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
