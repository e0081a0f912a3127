/// Compact JSON text (no whitespace, members in their order) for headers and claims the
/// gateway signs, and for RFC 7638 thumbprints.
public enum JSONSerializer {
    public static func serialize(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out)
        return out
    }

    static func write(_ value: JSONValue, to out: inout String) {
        switch value {
        case .object(let o):
            out += "{"
            for (n, member) in o.members.enumerated() {
                if n > 0 { out += "," }
                writeString(member.name.text, to: &out)
                out += ":"
                write(member.value, to: &out)
            }
            out += "}"
        case .array(let a):
            out += "["
            for (n, v) in a.enumerated() {
                if n > 0 { out += "," }
                write(v, to: &out)
            }
            out += "]"
        case .string(let s): writeString(s, to: &out)
        case .number(let text): out += text
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        }
    }

    /// `s` as a JSON string literal, quotes included.
    public static func quoted(_ s: String) -> String {
        var out = ""
        writeString(s, to: &out)
        return out
    }

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        out += "\""
    }
}
