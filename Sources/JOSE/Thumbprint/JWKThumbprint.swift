extension JWK {
    /// RFC 7638 JWK thumbprint: SHA-256 over the required members only, in lexicographic
    /// order, no whitespace (§3.2–3.3), base64url-encoded.
    public func thumbprint() -> String {
        let required: [String]
        switch kty {
        case "RSA": required = ["e", "kty", "n"]
        case "EC": required = ["crv", "kty", "x", "y"]
        case "OKP": required = ["crv", "kty", "x"]
        default: required = ["k", "kty"]
        }
        var values: [String] = []
        values.reserveCapacity(required.count)
        for name in required {
            if name == "k", case .symmetric(let k) = material {
                values.append(Base64URL.encode(k))
                continue
            }
            values.append(publicMembers[name] ?? "")
        }
        let json =
            Self.thumbprintInput(required, values)
            ?? Array(JSONSerializer.serialize(.object(JSONObject(required, values))).utf8)
        return Base64URL.encode(Digest.sha256.hash(json))
    }

    /// §3.2's JSON written straight into bytes — `{"crv":"P-256","kty":"EC","x":"…","y":"…"}` —
    /// when no value needs escaping (base64url text and registered names never do), so that a
    /// DPoP request pays no general serializer; nil otherwise.
    static func thumbprintInput(_ names: [String], _ values: [String]) -> [UInt8]? {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(values.reduce(16) { $0 + $1.utf8.count + 8 })
        for (i, name) in names.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: "\"")])
            for b in values[i].utf8 {
                // Printable ASCII other than the quote and the backslash is written as is (RFC 8259 §7).
                guard b >= 0x20, b < 0x7f, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\") else { return nil }
                out.append(b)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

extension JSONObject {
    fileprivate init(_ names: [String], _ values: [String]) {
        self.init()
        for (n, v) in zip(names, values) { self[n] = .string(v) }
    }
}
