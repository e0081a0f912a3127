// Test-only tool for IntegrationTests/security/test_http1_differential.py: parses each request it
// is given with tokengate's HTTP1RequestParser and prints what it made of it, so the test
// can compare with llhttp (PyPI httptools).
//
// stdin: frames of a 4-byte big-endian length then that many bytes, one request stream each.
// stdout: one JSON object per frame, in order:
//   {"error": null | "<code>", "status": <int|null>, "idle": <bool>, "messages": [{"method",
//    "target", "version", "headers": [[name, value]…], "body", "trailers": [[name, value]…]}…]}
// "idle": false when the input ended inside a message (nothing refused, nothing complete).
// Byte strings are given one code point per byte (latin-1), so any byte round-trips.
import Glibc
import Reactor

func readAll() -> [UInt8] {
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n <= 0 { return data }
        data += chunk[0..<n]
    }
}

func json<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    var out = "\""
    for b in bytes {
        switch b {
        case 0x22: out += "\\\""
        case 0x5C: out += "\\\\"
        case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(b))
        default:
            let hex = String(b, radix: 16)
            out += "\\u00" + (hex.count == 1 ? "0" + hex : hex)
        }
    }
    return out + "\""
}

func json(_ fields: HTTP1Fields) -> String {
    "[" + fields.map { "[\(json($0.nameBytes)),\(json($0.valueBytes))]" }.joined(separator: ",") + "]"
}

func describe(_ wire: [UInt8]) -> String {
    var parser = HTTP1RequestParser()
    var messages: [String] = []
    var head: HTTP1RequestHead?
    var body: [UInt8] = []
    var refusal = "null"
    var status = "null"
    var rest = wire[...]
    do {
        while true {
            let (consumed, event) = try parser.parse(Array(rest))
            switch event {
            case .head(let h)?:
                head = h
                body = []
            case .body(let range)?: body += rest.dropFirst(range.lowerBound).prefix(range.count)
            case .end(let trailers)?:
                if let h = head {
                    messages.append(
                        "{\"method\":\(json(Array(h.method.utf8))),\"target\":\(json(h.targetBytes)),"
                            + "\"version\":\"\(h.version == .http10 ? "1.0" : "1.1")\",\"headers\":\(json(h.fields)),"
                            + "\"body\":\(json(body)),\"trailers\":\(json(trailers))}")
                }
                head = nil
            case nil: break
            }
            rest = rest.dropFirst(consumed)
            if event == nil { break }
        }
    } catch {
        refusal = "\"\(error.code.rawValue)\""
        status = "\(error.status)"
    }
    return
        "{\"error\":\(refusal),\"status\":\(status),\"idle\":\(parser.isIdle),\"messages\":[\(messages.joined(separator: ","))]}"
}

let input = readAll()
var offset = 0
var output = ""
while offset + 4 <= input.count {
    let length = input[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    offset += 4
    let end = min(input.count, offset + length)
    output += describe(Array(input[offset..<end])) + "\n"
    offset = end
    if output.utf8.count > 1 << 16 {
        print(output, terminator: "")
        output = ""
    }
}
print(output, terminator: "")
