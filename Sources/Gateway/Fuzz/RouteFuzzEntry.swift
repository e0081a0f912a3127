import JOSE
import OAuth
import Reactor

/// Entry points for fuzzing what a request's target and Host become before anything is
/// authorized (the libFuzzer target `RouteFuzz` in `fuzz/` and the corpus replay test call
/// these): `PathNormalizer`, `HostNormalizer`, `Router.decide` on a small fixed route table,
/// a route's `path_template` (`PathTemplate`, `TemplateTable`), and a DPoP proof's `htu`
/// compared as the gateway compares it, through the router's path normalization. They return
/// normally on every input; a failed `fuzzInvariant` is a finding.
public enum RouteFuzzEntry {
    /// The first byte: its low bit chooses a request (then bits 1–3 the method, bit 4 the hex
    /// case of the re-encoded variant) or two `htu` URIs — except `xxxx0111`, a path template
    /// (bits 4–6 the method); the rest is cut at its first line feed into the Host value and
    /// the target, the two URIs, or the template and the target.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let (a, b) = OAuthFuzzEntry.splitAtNewline(String(decoding: data.dropFirst(), as: UTF8.self))
        if first & 0x0F == 0x07 {
            let method = HTTPMethod.allCases[Int(first >> 4 & 7) % HTTPMethod.allCases.count]
            template(a, target: b, method: method)
        } else if first & 1 == 0 {
            let method = HTTPMethod.allCases[Int(first >> 1 & 7) % HTTPMethod.allCases.count]
            request(method: method, host: a, target: b, lowercaseHex: first & 0x10 != 0)
        } else {
            OAuthFuzzEntry.htu(a, b, normalizePath: TokenAuthenticator.normalizePath)
            OAuthFuzzEntry.htu(a, b)
        }
    }

    /// One request as `RouteResolver.prepare` reads it: the Host normalized, the target
    /// normalized, the route decided — each with its invariants (`checkHost`, `checkPath`,
    /// `checkedDecision`); and the target in other encodings of the same bytes gets the same
    /// normal form and the same decision.
    static func request(method: HTTPMethod, host raw: String, target: String, lowercaseHex: Bool) {
        let host = checkHost(raw)
        let outcome = PathNormalizer.normalize(target: target)
        if case .success(let n) = outcome { checkPath(n, target: target) }
        let decision = host.flatMap { h in (try? outcome.get()).map { checkedDecision(h, method, $0) } }
        for variant in [
            reencoded(target, every: 1, lowercaseHex: lowercaseHex),
            reencoded(target, every: 2, lowercaseHex: !lowercaseHex),
            decodedUnreserved(target)
        ] where variant != target {
            let again = PathNormalizer.normalize(target: variant)
            fuzzInvariant(again == outcome, "path: an encoding of the same path normalizes otherwise")
            if let host, case .success(let n) = again {
                fuzzInvariant(
                    router.decide(host: host, method: method, normalized: n) == decision,
                    "route: an encoding of the same path is routed otherwise")
            }
        }
        if let host, case .success(let n) = outcome { checkHTU(host: host, target: target, normalized: n) }
    }

    /// `target` with every `every`-th unreserved byte outside a `%XX` written as `%XX`
    /// (RFC 3986 §2.3: the same URI); its query as it was.
    static func reencoded(_ target: String, every: Int, lowercaseHex: Bool) -> String {
        let hex = Array((lowercaseHex ? "0123456789abcdef" : "0123456789ABCDEF").utf8)
        var seen = 0
        return rewritingPath(target) { piece, out in
            switch piece {
            case .byte(let b) where PathNormalizer.isUnreserved(b):
                seen += 1
                if seen % every == 0 {
                    out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0xF)]]
                } else {
                    out.append(b)
                }
            case .byte(let b): out.append(b)
            case .escape(_, let text), .query(let text): out += text
            }
        }
    }

    /// `target` with every `%XX` of an unreserved byte decoded (RFC 3986 §6.2.2.2); the
    /// target itself if its path has a "%" that starts no escape (decoding next to it could
    /// make one: "%%62c" is malformed, "%bc" is not).
    static func decodedUnreserved(_ target: String) -> String {
        var malformed = false
        let decoded = rewritingPath(target) { piece, out in
            switch piece {
            case .byte(let b):
                if b == UInt8(ascii: "%") { malformed = true }
                out.append(b)
            case .escape(let b, _) where PathNormalizer.isUnreserved(b): out.append(b)
            case .escape(_, let text), .query(let text): out += text
            }
        }
        return malformed ? target : decoded
    }

    private enum Piece {
        case byte(UInt8)
        /// A well-formed `%XX`: its byte and its text.
        case escape(UInt8, ArraySlice<UInt8>)
        /// "?" and what follows.
        case query(ArraySlice<UInt8>)
    }

    /// `target` rebuilt by `rewrite` from the pieces of its path (up to "?") and its query.
    private static func rewritingPath(_ target: String, _ rewrite: (Piece, inout [UInt8]) -> Void) -> String {
        let bytes = Array(target.utf8)
        let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.count
        var out: [UInt8] = []
        var i = 0
        while i < end {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < end, let hi = PathNormalizer.hexValue(bytes[i + 1]),
                let lo = PathNormalizer.hexValue(bytes[i + 2])
            {
                rewrite(.escape(hi << 4 | lo, bytes[i..<(i + 3)]), &out)
                i += 3
            } else {
                rewrite(.byte(bytes[i]), &out)
                i += 1
            }
        }
        rewrite(.query(bytes[end...]), &out)
        return String(decoding: out, as: UTF8.self)
    }
}
