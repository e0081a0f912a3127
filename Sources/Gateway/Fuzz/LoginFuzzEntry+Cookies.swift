import JOSE
import Reactor

/// Cookie headers (RFC 6265 §5.4 as a server reads them).
extension LoginFuzzEntry {
    /// `text` split at line feeds into Cookie header values, checked against a plain reading
    /// of the same bytes:
    /// - `Cookies.pairs` gives each `name=value` between ";" (spaces before the name dropped,
    ///   the name up to the first "=", pairs without "=" skipped), in order;
    /// - `Cookies` keeps the first value of each name, marks exactly the names sent with two
    ///   different values, and joins a value from its chunks only when none of them conflicts;
    /// - `CookieFilter.without` drops exactly the named pairs and keeps the rest as they were.
    public static func cookieHeaders(_ text: String) {
        let headers = lines(Array(text.utf8))
        var all: [(name: String, value: String)] = []
        for header in headers {
            var got: [(String, String)] = []
            Cookies.pairs(header) {
                got.append((String(decodingUTF8: $0), String(decodingUTF8: $1)))
            }
            let want = plainPairs(header)
            fuzzInvariant(got.elementsEqual(want) { $0 == $1 }, "cookies: pairs differ from the header's")
            all += want
            let names = Set(want.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.name) + ["tokengate_session"])
            let kept = want.filter { !names.contains($0.name) }
            let filtered = CookieFilter.without(names, header)
            fuzzInvariant((filtered == nil) == kept.isEmpty, "cookie filter: emptiness differs")
            if let filtered {
                fuzzInvariant(
                    plainPairs(filtered).elementsEqual(kept) { $0 == $1 }, "cookie filter: kept pairs changed")
            }
        }
        let cookies = Cookies(cookieHeaders: headers)
        var first: [String: String] = [:]
        var twice = Set<String>()
        for (name, value) in all {
            if let v = first[name] {
                if v != value { twice.insert(name) }
            } else {
                first[name] = value
            }
        }
        fuzzInvariant(
            cookies.values == first && cookies.conflicting == twice, "cookies: first values or conflicts differ")
        for name in Set(all.map(\.name)) {
            let chunks = [name] + (1..<Cookies.maxChunks).map { "\(name)_\($0)" }
            let conflicting = chunks.contains { twice.contains($0) }
            fuzzInvariant(cookies.isConflicting(name) == conflicting, "cookies: a conflicting chunk missed")
            var joined = first[name]
            for chunk in chunks.dropFirst() {
                guard let more = first[chunk] else { break }
                joined! += more
            }
            fuzzInvariant(cookies.value(name) == (conflicting ? nil : joined), "cookies: a value joined otherwise")
        }
    }

    /// The header values in `bytes`, one a line.
    static func lines(_ bytes: [UInt8]) -> [String] {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// RFC 6265 §4.2.1's cookie-string, read byte by byte: pairs split at ";", spaces before
    /// a name dropped, name and value split at the first "=", a pair without "=" ignored.
    static func plainPairs(_ header: String) -> [(name: String, value: String)] {
        Array(header.utf8).split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false).compactMap { pair in
            let trimmed = pair.drop { $0 == UInt8(ascii: " ") }
            guard let eq = trimmed.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            return (
                String(decoding: trimmed[..<eq], as: UTF8.self), String(decoding: trimmed[(eq + 1)...], as: UTF8.self)
            )
        }
    }
}
