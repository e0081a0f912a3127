import JOSE
import Reactor

/// API keys as a request and a key file bring them (first byte 0xF0 or more; its low bits
/// choose): a presented key (`APIKey.parse`), the key fields of a request
/// (`APIKeyLocations.presented`), a key file (`APIKeyFile.parse`) and its times (`RFC3339`).
extension LoginFuzzEntry {
    static func apiKeys(_ rest: [UInt8], kind: UInt8) {
        switch kind & 3 {
        case 0: apiKey(rest)
        case 1: apiKeyFields(rest)
        case 2: apiKeyFile(String(decoding: rest, as: UTF8.self))
        default: rfc3339(String(decoding: rest, as: UTF8.self))
        }
    }

    /// A key that parses is its bytes, of its length and prefix, and its digest reads back.
    static func apiKey(_ bytes: [UInt8]) {
        guard case .success(let key) = APIKey.parse(bytes) else { return }
        fuzzInvariant(Array(key.text.utf8) == bytes, "api key: the text is not the bytes")
        fuzzInvariant(bytes.count == APIKey.length && key.text.hasPrefix(APIKey.prefix), "api key: shape")
        fuzzInvariant(APIKeyDigest(key.digest.description) == key.digest, "api key: the digest does not read back")
    }

    /// Lines `name: value` as a request's fields: a key found has no surrounding whitespace and
    /// comes with the sets that read where it came.
    static func apiKeyFields(_ bytes: [UInt8]) {
        var header = APIKeySetConfig(name: "h")
        header.file = "/dev/null"
        var scheme = APIKeySetConfig(name: "s")
        scheme.header = nil
        scheme.scheme = "ApiKey"
        let locations = APIKeyLocations(sets: ["h", "s"], ["h": header, "s": scheme])
        var fields = HTTP1Fields()
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            fields.append(
                String(decoding: line[..<colon], as: UTF8.self), String(decoding: line[(colon + 1)...], as: UTF8.self))
        }
        if case .key(let key, let sets, let inAuthorization) = locations.presented(fields) {
            fuzzInvariant(key.first != 0x20 && key.last != 0x20 && key.first != 0x09, "api key fields: untrimmed")
            fuzzInvariant(sets == (inAuthorization ? ["s"] : ["h"]), "api key fields: sets not the location's")
        }
    }

    /// A file that parses renders to a file that parses to the same entries, ids unique.
    static func apiKeyFile(_ text: String) {
        guard case .success(let entries) = APIKeyFile.parse(text) else { return }
        fuzzInvariant(Set(entries.map(\.id)).count == entries.count, "api key file: an id twice")
        guard case .success(let again) = APIKeyFile.parse(APIKeyFile.render(entries)) else {
            fuzzInvariant(false, "api key file: its rendering does not parse")
            return
        }
        fuzzInvariant(again == entries, "api key file: its rendering reads back otherwise")
    }

    /// A time that parses is written as one that parses to the same second.
    static func rfc3339(_ text: String) {
        guard let t = RFC3339.seconds(text) else { return }
        fuzzInvariant(RFC3339.seconds(RFC3339.text(t)) == t, "rfc3339: the time does not read back")
    }
}
