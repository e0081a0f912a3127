/// The derived components (RFC 9421 §2.2): values taken from the message's control data, not
/// its fields.
enum DerivedComponent {
    static func value(_ component: ComponentIdentifier, of message: SignedMessage) throws -> String {
        if message.isResponse, component.name != "@status" {
            throw MessageSignatureError(.componentMissing, "\(component.name) is a request's component")
        }
        switch component.name {
        case "@method":
            // §2.2.1: as sent, case kept.
            return message.method
        case "@target-uri":
            // §2.2.2: the target URI as the recipient reconstructs it (RFC 9110 §7.1).
            return message.scheme + "://" + authority(message) + requestTarget(message)
        case "@authority":
            return authority(message)
        case "@scheme":
            return message.scheme
        case "@request-target":
            return requestTarget(message)
        case "@path":
            return message.path
        case "@query":
            // §2.2.7: the query with its `?`, and `?` alone when there is none.
            return "?" + (message.query ?? "")
        case "@query-param":
            return try queryParameter(component.string("name") ?? "", of: message)
        case "@status":
            guard let status = message.status else {
                throw MessageSignatureError(.componentMissing, "@status is a response's component")
            }
            return String(status)
        default:
            throw MessageSignatureError(.unsupportedComponent, "unknown derived component \(component.name)")
        }
    }

    static func requestTarget(_ message: SignedMessage) -> String {
        message.query.map { message.path + "?" + $0 } ?? message.path
    }

    /// §2.2.3: the authority normalized as RFC 9110 §4.2.3 compares it: a lowercase host, and
    /// no port where it is the scheme's default.
    static func authority(_ message: SignedMessage) -> String {
        let lower = message.authority.lowercased()
        let defaultPort = message.scheme == "https" ? ":443" : message.scheme == "http" ? ":80" : nil
        if let defaultPort, lower.hasSuffix(defaultPort) { return String(lower.dropLast(defaultPort.count)) }
        return lower
    }

    /// §2.2.8: the one value of the named parameter, decoded as a form (`+` is a space) and
    /// percent-encoded again; a parameter named twice, or not at all, fails the base.
    static func queryParameter(_ name: String, of message: SignedMessage) throws -> String {
        var found: String?
        for pair in (message.query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: "=")
            let rawName = eq.map { pair[..<$0] } ?? pair
            let rawValue = eq.map { pair[pair.index(after: $0)...] } ?? ""
            guard FormEncoding.reencoded(rawName) == name else { continue }
            guard found == nil else {
                throw MessageSignatureError(.componentMissing, "query parameter \(name) occurs more than once")
            }
            found = FormEncoding.reencoded(rawValue)
        }
        guard let found else { throw MessageSignatureError(.componentMissing, "the query has no parameter \(name)") }
        return found
    }
}

/// application/x-www-form-urlencoded decoding (the URL Standard §5.1), then percent-encoding
/// of every byte but ASCII letters, digits and `*-._` (its urlencoded percent-encode set), with
/// a space as `%20` (RFC 9421 §2.2.8's examples).
enum FormEncoding {
    static func reencoded(_ raw: Substring) -> String { encode(decode(raw)) }

    static func decode(_ raw: Substring) -> [UInt8] {
        var out: [UInt8] = []
        let bytes = Array(raw.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "+") {
                out.append(0x20)
            } else if b == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = hex(bytes[i + 1]),
                let lo = hex(bytes[i + 2])
            {
                out.append(hi << 4 | lo)
                i += 2
            } else {
                out.append(b)
            }
            i += 1
        }
        return out
    }

    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in bytes {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), digits[Int(b >> 4)], digits[Int(b & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
