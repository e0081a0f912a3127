/// Removes named cookies from a Cookie header value (RFC 6265 §4.2.1: `name=value` pairs
/// separated by "; "); nil when nothing is left.
enum CookieFilter {
    static func without(_ names: Set<String>, _ header: String) -> String? {
        let kept = header.split(separator: ";").filter { part in
            let pair = part.drop(while: { $0 == " " })
            let name = pair.prefix { $0 != "=" }
            return !names.contains(String(name))
        }.map { $0.drop(while: { $0 == " " }) }
        return kept.isEmpty ? nil : kept.joined(separator: "; ")
    }
}
